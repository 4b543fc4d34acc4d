// Benchmark of session transcripts (issue 35 §1, decision 0084): how fast a node writes a session's transcript and how
// fast a page of it is read back. A real node (on the machine's Postgres in a schema of its own, or `--engine
// embedded` for PGlite) runs on core 0; this driver, on core 1, is the session's worker: it relays a session emitting
// `--mb` MB of output (lines of 100 bytes) through `POST /api/sessions/{id}/output` as `troupe worker` does, one call
// at a time, `--batch` lines a call (the worker sends 20 at a time when output is fast, more when a call was slow),
// then reads pages of the transcript at random places.
//
//   npx tsx ops/bench/transcript.ts [--engine postgres|embedded] [--mb 10] [--batch 20] [--reads 300]
//
// Prints: entries written per second, the node's CPU per 1,000 lines, and (on Postgres) what the same rows cost this
// process as plain batched INSERTs for comparison; the p50 and p99 of a page read of 200 and of 1,000 entries.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../secrets.js';
import { call, pct, printTable, startServer, type RunningServer } from './harness.js';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'postgres' },
    mb: { type: 'string', default: '10' },
    batch: { type: 'string', default: '20' },
    reads: { type: 'string', default: '300' },
  },
});
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const postgresUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LINE_BYTES = 100;
const lines = Math.round((Number(values.mb) * 1_000_000) / LINE_BYTES);
const batch = Number(values.batch);
const reads = Number(values.reads);
const adminToken = generateAdminToken();
const schema = `bench_transcript_${randomBytes(4).toString('hex')}`;
const work = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-transcript-'));
spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
let server: RunningServer | undefined;

/** User and system CPU a process has used, ms (/proc/<pid>/stat fields 14 and 15, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Line `i` of the session: 99 characters and its newline, like an agent's log. */
const lineOf = (i: number): string => `${`[${String(i).padStart(7, '0')}] compiling module ${i % 977} of the build, no warnings so far`.padEnd(LINE_BYTES - 1, '.')}\n`;

async function post(base: string, route: string, token: string, body: unknown): Promise<void> {
  const res = await fetch(`${base}${route}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 202 && res.status !== 200) throw new Error(`POST ${route}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/** What the same rows cost as plain batched INSERTs from this process (no node in between), CPU ms per 1,000 lines. */
async function plainInserts(total: number): Promise<{ perSecond: number; cpuPerThousand: number }> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    await client.query(`set search_path to "${schema}"`);
    await client.query('create table plain_lines (org_id uuid, session_id text, seq bigint, at timestamptz, kind smallint, text text, primary key (org_id, session_id, seq))');
    const org = '00000000-0000-4000-8000-000000000000';
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < total; i += batch) {
      const n = Math.min(batch, total - i);
      const texts = Array.from({ length: n }, (_, k) => lineOf(i + k).slice(0, -1));
      await client.query(
        `insert into plain_lines select $1, 's', $2::bigint + v.ord, now(), 1, v.text from unnest($3::text[]) with ordinality as v(text, ord)`,
        [org, i, texts],
      );
    }
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    return { perSecond: total / seconds, cpuPerThousand: ((used.user + used.system) / 1000) / (total / 1000) };
  } finally {
    await client.end();
  }
}

async function main(): Promise<number> {
  const env: NodeJS.ProcessEnv = {
    TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info',
    TROUPE_NODE_ID: 'bench-transcript', REDIS_URL: undefined, AMQP_URL: undefined,
    TROUPE_RATE_LIMIT_WORKER_OUTPUT_BYTES_PER_MINUTE: '1000000000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
    ...(values.engine === 'embedded'
      ? { DATABASE_URL: undefined, TROUPE_DATA_DIR: path.join(work, 'node') }
      : { DATABASE_URL: postgresUrl, TROUPE_DATABASE_SCHEMA: schema }),
  };
  process.stderr.write(`starting a node (${values.engine})...\n`);
  server = await startServer(path.join(root, 'ops/bench/bench-node.ts'), env, '0');
  const base = `http://127.0.0.1:${server.port}`;
  const org = await call(base, 'POST', '/api/admin/orgs', adminToken, { name: 'Bench', owner: { email: 'bench@bench.test' } });
  const apiKey = org.apiKey.fullKey as string;
  const worker = await call(base, 'POST', '/v1/daemon/register', '', { registrationToken: org.registrationToken, hostname: 'bench', maxAgents: 4 });
  const jwt = worker.runtimeJwt as string;
  const dispatched = await call(base, 'POST', '/api/agent-dispatch', apiKey, { projectId: org.project.id, prompt: 'Build the monorepo' });
  const id = dispatched.sessionId as string;
  await call(base, 'POST', '/api/daemon/poll', jwt, { workerId: worker.workerId, capacity: 4 });
  await call(base, 'POST', `/api/sessions/${id}/status`, jwt, { workerId: worker.workerId, status: 'claimed' });
  await call(base, 'POST', `/api/sessions/${id}/status`, jwt, { workerId: worker.workerId, status: 'running' });

  // 1. Write: the session emits `lines` lines, relayed `batch` at a time, one call at a time.
  process.stderr.write(`writing ${lines} lines (${values.mb} MB) in calls of ${batch}...\n`);
  const cpuBefore = cpuMs(server.child.pid!);
  const started = performance.now();
  for (let i = 0; i < lines; i += batch) {
    const chunks = Array.from({ length: Math.min(batch, lines - i) }, (_, k) => lineOf(i + k));
    await post(base, `/api/sessions/${id}/output`, jwt, { workerId: worker.workerId, chunks });
  }
  const writeSeconds = (performance.now() - started) / 1000;
  const nodeCpu = cpuMs(server.child.pid!) - cpuBefore;
  const head = await call(base, 'GET', `/api/public/sessions/${id}/transcript?limit=1`, apiKey);
  if (head.lastSeq < lines) throw new Error(`the transcript holds ${head.lastSeq} entries, not the ${lines} lines written`);

  // 2. Read: pages at random places, as a console or a CLI pages through it.
  const readLatencies = async (limit: number): Promise<number[]> => {
    const out: number[] = [];
    for (let r = 0; r < reads + 10; r++) {
      const after = Math.floor(Math.random() * Math.max(1, head.lastSeq - limit));
      const t0 = performance.now();
      const page = await call(base, 'GET', `/api/public/sessions/${id}/transcript?after=${after}&limit=${limit}`, apiKey);
      if (r >= 10) out.push(performance.now() - t0);
      if (page.entries.length !== limit) throw new Error(`a page after ${after} held ${page.entries.length} entries, not ${limit}`);
    }
    return out;
  };
  process.stderr.write(`reading ${reads} pages of 200 and of 1000...\n`);
  const small = await readLatencies(200);
  const large = await readLatencies(1000);
  const plain = values.engine === 'embedded' ? undefined : await plainInserts(lines);

  const f = (n: number, digits = 1) => n.toFixed(digits);
  printTable([
    { measure: 'entries written per second (node, end to end)', value: f(lines / writeSeconds, 0) },
    { measure: `MB of output per second`, value: f(Number(values.mb) / writeSeconds, 2) },
    { measure: 'node CPU ms per 1,000 lines', value: f(nodeCpu / (lines / 1000)) },
    ...(plain ? [
      { measure: 'plain batched INSERTs: lines per second (no node)', value: f(plain.perSecond, 0) },
      { measure: 'plain batched INSERTs: client CPU ms per 1,000 lines', value: f(plain.cpuPerThousand) },
    ] : []),
    { measure: 'page of 200: p50 ms', value: f(pct(small, 50), 2) },
    { measure: 'page of 200: p99 ms', value: f(pct(small, 99), 2) },
    { measure: 'page of 1000: p50 ms', value: f(pct(large, 50), 2) },
    { measure: 'page of 1000: p99 ms', value: f(pct(large, 99), 2) },
  ]);
  return 0;
}

async function cleanup(): Promise<void> {
  await server?.stop().catch(() => undefined);
  if (values.engine !== 'embedded') {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try { await client.query(`drop schema if exists "${schema}" cascade`); } finally { await client.end(); }
  }
  rmSync(work, { recursive: true, force: true });
}

main().then(async (code) => { await cleanup(); process.exit(code); }, async (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  await cleanup();
  process.exit(1);
});
