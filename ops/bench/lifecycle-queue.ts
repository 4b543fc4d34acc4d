/**
 * G15 (issue 36; PERFORMANCE.md "Third round"): G9's lifecycle rate with the offer decision in it, on a node whose
 * queue holds `--pending` sessions (default 100,000) across `--projects` projects (100) and `--keys` concurrency keys
 * (1,000, each limited to 1 under `queue` in its project), with random priorities, against the same lifecycle on a
 * node with no backlog, keys or priorities, interleaved round by round in one run. The figure is the ratio of the two
 * rates (goal ≥ 0.9: at most 10 % slower).
 *
 * A lifecycle here is G9's (`POST /api/agent-dispatch`, then `claimed`, `running`, `finalizing`, `completed` as a
 * registered daemon) with the offer decision between the dispatch and the claim: the client polls
 * (`POST /api/daemon/poll`, capacity 4) and claims the first offer that is still free (a 409 means another client's
 * claim won), polling again if none was. What it claims is whatever the poll offered, not necessarily what it
 * dispatched: on the loaded node, the backlog stays at `--pending`. The poll's own latency is printed too. After the
 * rounds, the plan of the fair offer query (storage/sessions/offers.ts `fairOfferQuery`) on the loaded node's database
 * is printed with `EXPLAIN (ANALYZE, BUFFERS)`, to show the indexes it reads.
 *
 *   npx tsx ops/bench/lifecycle-queue.ts [--rounds 3] [--seconds 10] [--warmup 3] [--clients 32]
 *     [--pending 100000] [--projects 100] [--keys 1000]
 * DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) names the server; each node gets a throw-away
 * database there, REDIS_URL (default the local one) a key prefix of its own. Transport in-process (the `pg` set of G9).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import { cpuUs, median, pct, printTable, startFlags, startServer, ThrowAwayDatabases, type RunningServer } from './harness.js';
import { closeConnections, ok, post } from './bench-http.js';
import { generateMasterKey } from '../secrets.js';
import { fairOfferQuery } from '../../storage/sessions/offers.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    clients: { type: 'string', default: '32' },
    pending: { type: 'string', default: '100000' },
    projects: { type: 'string', default: '100' },
    keys: { type: 'string', default: '1000' },
  },
});
const bounded = (value: string | undefined, low: number, high: number, name: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < low || n > high) throw new Error(`--${name} must be an integer in ${low}..${high}`);
  return n;
};
const rounds = bounded(values.rounds, 1, 50, 'rounds');
const seconds = bounded(values.seconds, 1, 600, 'seconds');
const warmup = bounded(values.warmup, 0, 600, 'warmup');
const clients = bounded(values.clients, 1, 1024, 'clients');
const pendingTarget = bounded(values.pending, 0, 10_000_000, 'pending');
const projectCount = bounded(values.projects, 1, 10_000, 'projects');
const keyCount = bounded(values.keys, 1, 1_000_000, 'keys');
const postgresUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const GOAL_RATIO = 0.9;
const POLL_CAPACITY = 4;

const here = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
// The load generator stays off the node's core (PERFORMANCE.md "Method").
spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });

const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-lcq-'));
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;
const masterKey = generateMasterKey();
const tag = randomBytes(3).toString('hex');

interface Daemon { workerId: string; runtimeJwt: string }
interface Node {
  readonly name: string;
  readonly server: RunningServer;
  readonly base: URL;
  readonly databaseUrl: string;
  readonly orgId: string;
  readonly apiKey: string;
  readonly projectIds: string[];
  readonly daemons: Daemon[];
  /** What a dispatch of this node's lifecycle carries besides the prompt. */
  readonly dispatchBody: () => Record<string, unknown>;
  readonly polls: number[];
}

const servers: RunningServer[] = [];
const databases = new ThrowAwayDatabases(postgresUrl, 'troupe_bench_lcq');

/** Runs `count` calls of `task` with `width` in flight. */
async function inParallel(count: number, width: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await task(next++);
  }));
}

async function startNode(name: string, loaded: boolean): Promise<Node> {
  const label = name.replace(/\W/g, '_');
  const databaseUrl = await databases.create(label);
  const env: NodeJS.ProcessEnv = {
    TROUPE_MASTER_KEY: masterKey, TROUPE_ADMIN_TOKEN: adminToken, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info',
    TROUPE_NODE_ID: `bench-lcq-${label}`, TROUPE_DATA_DIR: path.join(workDir, label),
    DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, BENCH_CACHE_PREFIX: `troupe-bench-lcq-${tag}-${label}:`, AMQP_URL: undefined,
    TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
  };
  process.stderr.write(`starting ${name}...\n`);
  const server = await startServer(path.join(here, 'ops/bench/bench-node.ts'), env, '0', startFlags(here));
  servers.push(server);
  const base = new URL(`http://127.0.0.1:${server.port}`);
  const org = await ok(base, '/api/admin/orgs', adminToken, { name: `Bench ${name}`, owner: { email: `bench-${label}@bench.test` } });
  const projectIds: string[] = [org.project.id];
  if (loaded) {
    // No route creates a project (they come with an org); the bench adds the rest to the node's database directly.
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      for (let i = 1; i < projectCount; i++) {
        const id = randomUUID();
        await db.query('insert into projects (id, org_id, name, slug) values ($1, $2, $3, $4)', [id, org.org.id, `Project ${i}`, `project-${i}`]);
        projectIds.push(id);
      }
    } finally {
      await db.end();
    }
  }
  const token = loaded
    ? (await ok(base, `/api/org/${org.org.id}/registration-tokens`, org.userToken, { name: 'bench', projects: projectIds })).registrationToken
    : org.registrationToken;
  const daemons: Daemon[] = [];
  for (let i = 0; i < clients; i += 1) {
    const d = await ok(base, '/v1/daemon/register', '', { registrationToken: token, hostname: `bench-${i}`, maxAgents: 64 });
    daemons.push({ workerId: d.workerId, runtimeJwt: d.runtimeJwt });
  }
  // Key k belongs to project k mod projects; every project holds each of its keys to one claim at a time.
  const keyed = () => {
    const key = Math.floor(Math.random() * keyCount);
    return { projectId: projectIds[key % projectIds.length], priority: Math.floor(Math.random() * 10), concurrencyKey: `bench:${key}` };
  };
  const node: Node = {
    name, server, base, databaseUrl, orgId: org.org.id, apiKey: org.apiKey.fullKey, projectIds, daemons,
    dispatchBody: loaded ? keyed : () => ({ projectId: org.project.id }), polls: [],
  };
  if (loaded) {
    await inParallel(projectIds.length, 8, async (i) => {
      await ok(base, `/api/projects/${projectIds[i]}/concurrency`, org.userToken, { defaultLimit: 1, strategy: 'queue' }, 'PUT');
    });
    const began = performance.now();
    await inParallel(pendingTarget, 64, async (i) => {
      await ok(base, '/api/agent-dispatch', node.apiKey, { prompt: `backlog ${i}`, ...keyed() });
      if (i > 0 && i % 10_000 === 0) process.stderr.write(`  ${i} of ${pendingTarget} pending dispatched\n`);
    });
    process.stderr.write(`  ${pendingTarget} pending in ${((performance.now() - began) / 1000).toFixed(0)} s\n`);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try { await db.query('analyze sessions'); } finally { await db.end(); }
  }
  return node;
}

async function refreshTokens(node: Node): Promise<void> {
  for (const d of node.daemons) {
    const r = await ok(node.base, '/api/daemon/heartbeat', d.runtimeJwt, { workerId: d.workerId });
    if (typeof r.runtimeJwt === 'string') d.runtimeJwt = r.runtimeJwt;
  }
}

const RUN = ['running', 'finalizing', 'completed'] as const;

/** One lifecycle with the offer decision in it; throws on a refusal other than a lost claim race. */
async function lifecycle(node: Node, daemon: Daemon): Promise<void> {
  await ok(node.base, '/api/agent-dispatch', node.apiKey, { prompt: 'Fix the flaky test in the billing module', ...node.dispatchBody() });
  for (let attempt = 0; attempt < 50; attempt++) {
    const started = performance.now();
    const polled = await ok(node.base, '/api/daemon/poll', daemon.runtimeJwt, { workerId: daemon.workerId, capacity: POLL_CAPACITY });
    node.polls.push(performance.now() - started);
    for (const offer of polled.sessions as Array<{ id: string; queuedPrompts?: unknown }>) {
      if (offer.queuedPrompts !== undefined) continue;
      const claimed = await post(node.base, `/api/sessions/${offer.id}/status`, daemon.runtimeJwt, { status: 'claimed', workerId: daemon.workerId });
      if (claimed.status === 409) continue; // another client claimed it first, or its key filled meanwhile
      if (claimed.status >= 300) throw new Error(`claim answered ${claimed.status}: ${JSON.stringify(claimed.body)}`);
      for (const status of RUN) await ok(node.base, `/api/sessions/${offer.id}/status`, daemon.runtimeJwt, { status, workerId: daemon.workerId, costUsd: 0.5 });
      return;
    }
  }
  throw new Error('no offer could be claimed in 50 polls');
}

interface Closed { readonly rate: number; readonly errors: number; readonly cpuMsPerLifecycle: number }

async function closedLoop(node: Node, windowSeconds: number): Promise<Closed> {
  const pid = node.server.child.pid!;
  const cpuBefore = cpuUs(pid) / 1e6;
  const endAt = performance.now() + windowSeconds * 1000;
  let finished = 0;
  let errors = 0;
  await Promise.all(node.daemons.map(async (daemon) => {
    while (performance.now() < endAt) {
      try {
        await lifecycle(node, daemon);
        if (performance.now() <= endAt) finished += 1;
      } catch (err) {
        errors += 1;
        if (errors <= 3) process.stderr.write(`${node.name}: ${(err as Error).message}\n`);
      }
    }
  }));
  const cpu = cpuUs(pid) / 1e6 - cpuBefore;
  return { rate: finished / windowSeconds, errors, cpuMsPerLifecycle: (cpu * 1000) / Math.max(1, finished) };
}

/** The fair offer query's plan on the loaded node's database, for one of its workers polling all its projects. */
async function explainOffer(node: Node): Promise<string> {
  const db = knex({ client: 'pg', connection: node.databaseUrl, pool: { min: 0, max: 1 } });
  try {
    const worker = node.daemons[0]!;
    const now = Date.now();
    const query = fairOfferQuery(db, node.orgId, node.projectIds, worker.workerId, POLL_CAPACITY, { liveSince: now - 90_000, graceSince: now - 60_000 }).toSQL();
    const rows = (await db.raw(`explain (analyze, buffers) ${query.sql}`, query.bindings as readonly Knex.RawBinding[])).rows as Array<{ 'QUERY PLAN': string }>;
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await db.destroy();
  }
}

let failed = false;
try {
  const plain = await startNode('plain', false);
  const loaded = await startNode(`${pendingTarget} pending, ${projectCount} projects, ${keyCount} keys`, true);
  const nodes = [plain, loaded];
  if (warmup > 0) {
    process.stderr.write(`warm-up ${warmup}s each...\n`);
    for (const node of nodes) await closedLoop(node, warmup);
  }
  const rows: Array<Record<string, string | number>> = [];
  const rates = new Map<string, number[]>(nodes.map((n) => [n.name, []]));
  const cpu = new Map<string, number[]>(nodes.map((n) => [n.name, []]));
  const ratios: number[] = [];
  let errors = 0;
  for (let round = 1; round <= rounds; round += 1) {
    const closed: Closed[] = [];
    for (const node of nodes) {
      await refreshTokens(node);
      node.polls.length = 0;
      const c = await closedLoop(node, seconds);
      closed.push(c);
      errors += c.errors;
      rates.get(node.name)!.push(c.rate);
      cpu.get(node.name)!.push(c.cpuMsPerLifecycle);
      rows.push({
        round, config: node.name, 'lifecycles/s': Math.round(c.rate), 'CPU ms/lifecycle': c.cpuMsPerLifecycle,
        'poll p50 ms': pct(node.polls, 50), 'poll p99 ms': pct(node.polls, 99), errors: c.errors,
      });
      process.stderr.write(`round ${round}/${rounds} ${node.name}: ${Math.round(c.rate)}/s, poll p99 ${pct(node.polls, 99).toFixed(1)} ms\n`);
    }
    ratios.push(closed[1]!.rate / closed[0]!.rate);
  }
  console.log(`\n${clients} clients, ${rounds} rounds of ${seconds}s (+${warmup}s warm-up); nodes on core 0, load on core 1; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  printTable(rows);
  const ratio = median(ratios);
  const met = ratio >= GOAL_RATIO && errors === 0;
  failed = !met;
  console.log(`\nG15: lifecycles/s with the backlog ÷ without, ≥ ${GOAL_RATIO}`);
  printTable([
    ...nodes.map((n) => ({ config: n.name, 'lifecycles/s': Math.round(median(rates.get(n.name)!)), 'CPU ms/lifecycle': median(cpu.get(n.name)!), ratio: '', met: '' })),
    { config: 'loaded ÷ plain (median of rounds)', 'lifecycles/s': '', 'CPU ms/lifecycle': '', ratio: `${ratio.toFixed(3)} (${ratios.map((r) => r.toFixed(2)).join(' ')})`, met: met ? 'yes' : 'NO' },
  ]);
  console.log(`\nThe fair offer query on the loaded node (one worker polling its ${loaded.projectIds.length} projects, capacity ${POLL_CAPACITY}):\n`);
  console.log(await explainOffer(loaded));
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  closeConnections();
  await databases.dropAll();
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
