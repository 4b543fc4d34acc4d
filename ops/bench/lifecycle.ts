/**
 * G9 (issue 19; PERFORMANCE.md "Second round"): session lifecycles per second through a node, against plain `pg`
 * doing the same writes on the same Postgres, interleaved round by round in one run.
 *
 * A lifecycle is five HTTP calls made one after another by one client: `POST /api/agent-dispatch` (API key), then
 * `POST /api/sessions/{id}/status` with `claimed`, `running`, `finalizing` and `completed` (a registered daemon's
 * runtime JWT). `--clients` closed-loop clients (default 32) repeat it for `--seconds`. The ceiling
 * (ceilings/pg-lifecycle.ts) is plain `pg`, a pool of 10, the same five transactions each writing the session row
 * and appending one event row, 32 concurrent, on the same Postgres.
 *
 * Node sets (`--sets`, comma-separated): `pg` (Postgres + Redis, in-process transport), `pg+amqp` (the same with
 * RabbitMQ), `embedded` (PGlite, in-memory cache). Each node runs on core 0 (as does the ceiling), this process,
 * the load generator, on core 1; Postgres and RabbitMQ run where the machine puts them. Every round runs the
 * ceiling, then each node: closed-loop for the rate, then paced at half that rate for the p99 of one status
 * transition. The node's CPU (user + system, from /proc) over the closed window, divided by the lifecycles it
 * finished, is the figure that holds on a shared machine, where wall-clock rates swing several-fold.
 *
 * At the end every completed lifecycle must have left exactly one terminal effect (its ledger key, one fleet quota
 * count, one session outcome) in the node's database: lost and duplicated are counted (Postgres sets only).
 *
 * `--baseline <checkout>` (another worktree of this repository, with node_modules) starts each set's node from that
 * tree too and interleaves it, so a change is measured against its parent in one run.
 *
 *   npx tsx ops/bench/lifecycle.ts [--sets pg,pg+amqp,embedded] [--rounds 5] [--seconds 10] [--warmup 3]
 *     [--clients 32] [--baseline <dir>] [--cpu-prof <dir>] [--no-paced] [--paced-rate <lifecycles/s>]
 * `--paced-rate` paces every node at that rate instead of half its own, to compare the latency of two trees at one load.
 * DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) names the server, each node and the ceiling get
 * a throw-away database there; REDIS_URL and AMQP_URL default to the local servers.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { cpuUs, median, printTable, startFlags, startServer, ThrowAwayDatabases, type RunningServer } from './harness.js';
import { closeConnections, ok } from './bench-http.js';
import { generateMasterKey } from '../secrets.js';

const { values } = parseArgs({
  options: {
    sets: { type: 'string', default: 'pg,pg+amqp,embedded' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    clients: { type: 'string', default: '32' },
    baseline: { type: 'string' },
    'cpu-prof': { type: 'string' },
    'no-paced': { type: 'boolean', default: false },
    'paced-rate': { type: 'string' },
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
const setNames = values.sets.split(',').map((s) => s.trim()).filter(Boolean);
for (const s of setNames) if (!['pg', 'pg+amqp', 'embedded'].includes(s)) throw new Error(`unknown set ${s}`);
const paced = !values['no-paced'];
const pacedRate = values['paced-rate'] === undefined ? undefined : bounded(values['paced-rate'], 1, 100_000, 'paced-rate');
const postgresUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const amqpUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const GOAL_RATIO = 0.5;
const GOAL_P99_MS = 20;

const here = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const trees: Array<{ tree: 'this' | 'baseline'; root: string }> = [{ tree: 'this', root: here }];
if (values.baseline !== undefined) trees.push({ tree: 'baseline', root: path.resolve(values.baseline) });

// The load generator stays off the node's core (PERFORMANCE.md "Method").
spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });

const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-lifecycle-'));
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;
const masterKey = generateMasterKey();
const tag = randomBytes(3).toString('hex');

interface Daemon { workerId: string; runtimeJwt: string }
interface Node {
  readonly name: string;
  readonly server: RunningServer;
  readonly base: URL;
  readonly apiKey: string;
  readonly projectId: string;
  readonly daemons: Daemon[];
  /** The node's database (Postgres sets), where its terminal effects are counted. */
  readonly databaseUrl: string | undefined;
  /** Public ids whose `completed` call answered 200. */
  readonly completed: string[];
}

const servers: RunningServer[] = [];
const databases = new ThrowAwayDatabases(postgresUrl, 'troupe_bench_lc');

async function startNode(set: string, tree: string, root: string): Promise<Node> {
  const name = tree === 'this' ? set : `${set} (baseline)`;
  const label = `${set}_${tree}`;
  const env: NodeJS.ProcessEnv = {
    TROUPE_MASTER_KEY: masterKey, TROUPE_ADMIN_TOKEN: adminToken, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info',
    TROUPE_NODE_ID: `bench-lc-${label.replace(/\W/g, '-')}`, TROUPE_DATA_DIR: path.join(workDir, label.replace(/\W/g, '_')),
    DATABASE_URL: undefined, REDIS_URL: undefined, AMQP_URL: undefined,
    // One API key dispatches for every client, as CI does: its per-credential limits (decision 0026) are lifted so the
    // bench measures the path, not the limiter's refusals (the limiter itself still counts every dispatch).
    TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
  };
  let databaseUrl: string | undefined;
  if (set !== 'embedded') {
    databaseUrl = await databases.create(label);
    Object.assign(env, { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, BENCH_CACHE_PREFIX: `troupe-bench-lc-${tag}-${label}:` });
  }
  if (set === 'pg+amqp') Object.assign(env, { AMQP_URL: amqpUrl, TROUPE_AMQP_PREFIX: `bench-lc-${tag}-${tree}` });
  const profile = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values['cpu-prof'], label.replace(/\W/g, '_'))}`] : [];
  process.stderr.write(`starting ${name}...\n`);
  const server = await startServer(path.join(root, 'ops/bench/bench-node.ts'), env, '0', [...startFlags(root), ...profile]);
  servers.push(server);
  const base = new URL(`http://127.0.0.1:${server.port}`);
  const org = await ok(base, '/api/admin/orgs', adminToken, { name: 'Bench', owner: { email: 'bench@bench.test' } });
  const daemons: Daemon[] = [];
  for (let i = 0; i < clients; i += 1) {
    const d = await ok(base, '/v1/daemon/register', '', { registrationToken: org.registrationToken, hostname: `bench-${i}`, maxAgents: 64 });
    daemons.push({ workerId: d.workerId, runtimeJwt: d.runtimeJwt });
  }
  return { name, server, base, apiKey: org.apiKey.fullKey, projectId: org.project.id, daemons, databaseUrl, completed: [] };
}

/** Runtime JWTs live 15 minutes; a heartbeat hands out a fresh one when little is left. */
async function refreshTokens(node: Node): Promise<void> {
  for (const d of node.daemons) {
    // The deprecated /v1 alias: a --baseline tree from before the /api daemon paths serves only that one.
    const r = await ok(node.base, '/v1/daemon/heartbeat', d.runtimeJwt, { workerId: d.workerId });
    if (typeof r.runtimeJwt === 'string') d.runtimeJwt = r.runtimeJwt;
  }
}

const STATUSES = ['claimed', 'running', 'finalizing', 'completed'] as const;

/** One lifecycle; the latency of each status call goes to `transitions` when given. Throws on any non-2xx. */
async function lifecycle(node: Node, daemon: Daemon, transitions?: number[]): Promise<void> {
  const dispatched = await ok(node.base, '/api/agent-dispatch', node.apiKey, { projectId: node.projectId, prompt: 'Fix the flaky test in the billing module' });
  const sessionId = dispatched.sessionId as string;
  for (const status of STATUSES) {
    const started = performance.now();
    await ok(node.base, `/api/sessions/${sessionId}/status`, daemon.runtimeJwt, { status, workerId: daemon.workerId, costUsd: 0.5 });
    transitions?.push(performance.now() - started);
  }
  node.completed.push(sessionId);
}

interface Closed { readonly rate: number; readonly lifecycles: number; readonly errors: number; readonly cpuMsPerLifecycle: number }

/** `clients` closed-loop clients for `windowSeconds`; lifecycles in flight at the end finish but are not counted. */
async function closedLoop(node: Node, windowSeconds: number): Promise<Closed> {
  const pid = node.server.child.pid!;
  const cpuBefore = cpuUs(pid) / 1e6;
  const began = performance.now();
  const endAt = began + windowSeconds * 1000;
  let finished = 0;
  let errors = 0;
  let cpuAtEnd = Number.NaN;
  const stopClock = setTimeout(() => { cpuAtEnd = cpuUs(pid) / 1e6; }, windowSeconds * 1000);
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
  clearTimeout(stopClock);
  if (Number.isNaN(cpuAtEnd)) cpuAtEnd = cpuUs(pid) / 1e6;
  const elapsed = (endAt - began) / 1000;
  return { rate: finished / elapsed, lifecycles: finished, errors, cpuMsPerLifecycle: ((cpuAtEnd - cpuBefore) * 1000) / Math.max(1, finished) };
}

/** Lifecycles started at `perSecond` (open loop) for `windowSeconds`; p99 of one status transition. */
async function pacedLoop(node: Node, perSecond: number, windowSeconds: number): Promise<{ p99: number; p50: number; errors: number }> {
  const transitions: number[] = [];
  const running: Array<Promise<void>> = [];
  let errors = 0;
  const began = performance.now();
  const endAt = began + windowSeconds * 1000;
  let started = 0;
  while (performance.now() < endAt) {
    const due = Math.floor(((performance.now() - began) / 1000) * perSecond);
    while (started < due) {
      const daemon = node.daemons[started % node.daemons.length]!;
      started += 1;
      running.push(lifecycle(node, daemon, transitions).catch(() => { errors += 1; }));
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await Promise.all(running);
  transitions.sort((a, b) => a - b);
  const at = (p: number) => transitions[Math.min(transitions.length - 1, Math.floor(p * transitions.length))] ?? Number.NaN;
  return { p99: at(0.99), p50: at(0.5), errors };
}

function runCeiling(databaseUrl: string, windowSeconds: number): Promise<{ rate: number; cpuMsPerLifecycle: number }> {
  const script = path.join(here, 'ops/bench/ceilings/pg-lifecycle.ts');
  const child = spawn('taskset', ['-c', '0', process.execPath, '--import', 'tsx', script], {
    env: { ...process.env, CEILING_DATABASE_URL: databaseUrl, CEILING_SECONDS: String(windowSeconds), CEILING_CLIENTS: String(clients) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
  return new Promise((resolve, reject) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), (windowSeconds + 60) * 1000);
    child.once('exit', (code) => {
      clearTimeout(kill);
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) return reject(new Error(`ceiling failed (exit ${code}): ${out}`));
      const r = JSON.parse(line) as { lifecycles: number; seconds: number; cpuSeconds: number };
      resolve({ rate: r.lifecycles / r.seconds, cpuMsPerLifecycle: (r.cpuSeconds * 1000) / Math.max(1, r.lifecycles) });
    });
  });
}

/** Terminal effects in the node's database against the lifecycles its clients saw complete. */
async function countEffects(node: Node): Promise<{ completed: number; lost: number; duplicated: number }> {
  const db = new pg.Client({ connectionString: node.databaseUrl! });
  await db.connect();
  try {
    // Clients see public ids; the ledger is keyed by each session's key (decision 0068). A --baseline tree from
    // before public ids has no such column: there the ids seen are the keys.
    const named = (await db.query(`select 1 from information_schema.columns where table_name = 'sessions' and column_name = 'public_id'`)).rowCount! > 0;
    const sessionKeys = named
      ? (await db.query('select id from sessions where public_id = any($1)', [node.completed])).rows.map((r: { id: string }) => r.id)
      : node.completed;
    const keys = sessionKeys.map((key) => `${key}:1:terminal`);
    const found = Number((await db.query('select count(*) as n from session_effect_ledger where key = any($1)', [keys])).rows[0].n);
    const ledger = Number((await db.query(`select count(*) as n from session_effect_ledger where key like '%:terminal'`)).rows[0].n);
    const quota = Number((await db.query('select coalesce(sum(sessions), 0) as n from fleet_quota_usage')).rows[0].n);
    const outcomes = Number((await db.query('select count(*) as n from session_outcomes')).rows[0].n);
    const activities = Number((await db.query(`select count(*) as n from session_activities where kind = 'session.completed'`)).rows[0].n);
    return {
      completed: node.completed.length,
      lost: node.completed.length - found,
      duplicated: Math.max(0, quota - ledger) + Math.max(0, outcomes - ledger) + Math.max(0, activities - ledger),
    };
  } finally {
    await db.end();
  }
}

let failed = false;
try {
  const ceilingDb = await databases.create('ceiling');
  const nodes: Node[] = [];
  for (const set of setNames) for (const { tree, root } of trees) nodes.push(await startNode(set, tree, root));

  if (warmup > 0) {
    process.stderr.write(`warm-up ${warmup}s each...\n`);
    await runCeiling(ceilingDb, warmup);
    for (const node of nodes) await closedLoop(node, warmup);
  }
  const rows: Array<Record<string, string | number>> = [];
  const perNode = new Map<string, { ratio: number[]; rate: number[]; cpu: number[]; p99: number[]; errors: number }>(
    nodes.map((n) => [n.name, { ratio: [], rate: [], cpu: [], p99: [], errors: 0 }]),
  );
  const ceilings: number[] = [];
  const ab = { rate: new Map<string, number[]>(), cpu: new Map<string, number[]>() };
  for (let round = 1; round <= rounds; round += 1) {
    for (const node of nodes) await refreshTokens(node);
    const ceiling = await runCeiling(ceilingDb, seconds);
    ceilings.push(ceiling.rate);
    rows.push({ round, config: 'plain pg ceiling', 'lifecycles/s': Math.round(ceiling.rate), ratio: 1, 'CPU ms/lifecycle': ceiling.cpuMsPerLifecycle, 'p99 ms (half rate)': '', errors: 0 });
    process.stderr.write(`round ${round}/${rounds} ceiling: ${Math.round(ceiling.rate)}/s\n`);
    const byName = new Map<string, Closed>();
    for (const node of nodes) {
      const closed = await closedLoop(node, seconds);
      byName.set(node.name, closed);
      const pace = pacedRate ?? closed.rate / 2;
      const half = paced && pace > 0 ? await pacedLoop(node, pace, seconds) : undefined;
      const figures = perNode.get(node.name)!;
      figures.ratio.push(closed.rate / ceiling.rate);
      figures.rate.push(closed.rate);
      figures.cpu.push(closed.cpuMsPerLifecycle);
      if (half) figures.p99.push(half.p99);
      figures.errors += closed.errors + (half?.errors ?? 0);
      rows.push({
        round, config: node.name, 'lifecycles/s': Math.round(closed.rate), ratio: closed.rate / ceiling.rate,
        'CPU ms/lifecycle': closed.cpuMsPerLifecycle, 'p99 ms (half rate)': half ? half.p99 : '', errors: closed.errors + (half?.errors ?? 0),
      });
      process.stderr.write(`round ${round}/${rounds} ${node.name}: ${Math.round(closed.rate)}/s, ${closed.cpuMsPerLifecycle.toFixed(2)} ms CPU per lifecycle${half ? `, p99 ${half.p99.toFixed(1)} ms at ${Math.round(pace)}/s` : ''}\n`);
    }
    for (const set of setNames) {
      const ours = byName.get(set);
      const theirs = byName.get(`${set} (baseline)`);
      if (!ours || !theirs) continue;
      (ab.rate.get(set) ?? ab.rate.set(set, []).get(set)!).push(ours.rate / theirs.rate);
      (ab.cpu.get(set) ?? ab.cpu.set(set, []).get(set)!).push(ours.cpuMsPerLifecycle / theirs.cpuMsPerLifecycle);
    }
  }
  console.log(`\n${clients} clients, ${rounds} rounds of ${seconds}s (+${warmup}s warm-up); nodes and ceiling on core 0, load on core 1; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  printTable(rows);

  const summary: Array<Record<string, string | number>> = [];
  summary.push({ config: 'plain pg ceiling', 'lifecycles/s': Math.round(median(ceilings)), 'ratio (median)': '', 'rounds': '', 'CPU ms/lifecycle': '', 'p99 ms': '', errors: '', 'completed': '', lost: '', duplicated: '', met: '' });
  for (const node of nodes) {
    const f = perNode.get(node.name)!;
    const effects = node.databaseUrl ? await countEffects(node) : undefined;
    const p99 = f.p99.length > 0 ? median(f.p99) : Number.NaN;
    const ratio = median(f.ratio);
    // Paced at a rate of the caller's, the p99 is not the goal's (at half the node's own rate): nothing is judged.
    const goalSet = (node.name === 'pg' || node.name === 'pg+amqp') && pacedRate === undefined;
    const met = ratio >= GOAL_RATIO && (!paced || p99 <= GOAL_P99_MS) && f.errors === 0 && (effects === undefined || (effects.lost === 0 && effects.duplicated === 0));
    if (goalSet && !met) failed = true;
    summary.push({
      config: node.name, 'lifecycles/s': Math.round(median(f.rate)), 'ratio (median)': ratio, rounds: f.ratio.map((r) => r.toFixed(2)).join(' '),
      'CPU ms/lifecycle': median(f.cpu), 'p99 ms': Number.isNaN(p99) ? '' : p99, errors: f.errors,
      completed: effects?.completed ?? node.completed.length, lost: effects?.lost ?? 'n/a', duplicated: effects?.duplicated ?? 'n/a',
      met: goalSet ? (met ? 'yes' : 'NO') : '',
    });
  }
  console.log(`\nG9: lifecycles/s ÷ plain pg ≥ ${GOAL_RATIO} (stretch 1.0), transition p99 ≤ ${GOAL_P99_MS} ms at half that rate, 0 lost or duplicated terminal effects`);
  if (pacedRate !== undefined) console.log(`(p99 paced at ${pacedRate} lifecycles/s for every node, not at half its rate: not judged)`);
  printTable(summary);
  for (const set of ab.rate.keys()) {
    console.log(`${set}: this ÷ baseline, median of ${rounds} rounds: lifecycles/s ${median(ab.rate.get(set)!).toFixed(3)}, node CPU per lifecycle ${median(ab.cpu.get(set)!).toFixed(3)}`);
  }
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  closeConnections();
  await databases.dropAll();
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
