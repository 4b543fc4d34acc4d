// Benchmark of transcript ingest at fleet scale (issue 35 §4, decision 0090): `--sessions` sessions (100) each
// printing `--rate` lines a second (2,000) for `--seconds` (30), relayed to a real node by the worker's own
// `OutputRelay` (batches, one call at a time per session, numbered chunks, backpressure). A session whose relay is
// backlogged stops printing, as an agent blocked on its pipe would, so the rate reached is what the node and its
// database took. Then every session's transcript is read back from the database: each line exactly once, in order.
// Then the same number of lines, in batches of the mean size the node saw, go into a table of the same shape with
// plain batched INSERTs from this process (as many connections as sessions in flight could use, 8), for the cost the
// issue compares against.
//
//   taskset -c 1 npx tsx ops/bench/transcript-ingest.ts [--sessions 100] [--rate 2000] [--seconds 30] [--cpu-prof <dir>]
//
// The node runs on core 0 with Postgres (a schema of its own, dropped afterwards); this driver is every worker and
// agent. CPU is read from /proc for the node, for this process and for all of Postgres's processes.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../secrets.js';
import { ApiError, type WorkerApi } from '../cli/worker/api.js';
import { OutputRelay } from '../cli/worker/output-relay.js';
import { call, dropSchema, printTable, runBench, startServer, type RunningServer } from './harness.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '100' }, rate: { type: 'string', default: '2000' }, seconds: { type: 'string', default: '30' },
    'cpu-prof': { type: 'string' },
  },
});
const SESSIONS = Number(values.sessions);
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const TICK_MS = 10;
const PER_WORKER = 25;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const postgresUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const schema = `bench_ingest_${randomBytes(4).toString('hex')}`;
const adminToken = generateAdminToken();
let server: RunningServer | undefined;

const ticksOf = (pid: number | 'self'): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
};
/** CPU ms of every Postgres process (the node's or this process's backends among them). */
const postgresCpuMs = (): number => readdirSync('/proc').filter((d) => /^\d+$/.test(d)).reduce((ms, pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres' ? ms + ticksOf(Number(pid)) * 10 : ms;
  } catch {
    return ms;
  }
}, 0);
const selfCpuMs = (): number => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

/** Line `n` of session `s`: about 100 bytes, numbered so the read-back can tell order and repeats. */
const lineOf = (s: number, n: number): string => `s${s} line ${n} ${'compiling module of the build, no warnings so far '.repeat(2)}`.slice(0, 99);

interface BenchSession { readonly index: number; readonly id: string; readonly relay: OutputRelay; printed: number; paused: boolean }

/** Just the part of the worker's API the relay uses, over fetch with keep-alive. */
function relayApi(base: string, counters: { calls: number; chunks: number }): WorkerApi {
  const output: WorkerApi['output'] = async (token, id, body) => {
    const res = await fetch(`${base}/api/sessions/${id}/output`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 202) throw new ApiError(res.status, undefined, text.slice(0, 200), undefined);
    counters.calls++;
    counters.chunks += body.chunks.length;
  };
  return { output, stepHeartbeat: async () => undefined } as unknown as WorkerApi;
}

async function setUp(base: string, counters: { calls: number; chunks: number }): Promise<{ sessions: BenchSession[]; apiKey: string }> {
  const org = await call(base, 'POST', '/api/admin/orgs', adminToken, { name: 'Ingest', owner: { email: 'ingest@bench.test' } });
  const apiKey = org.apiKey.fullKey as string;
  const api = relayApi(base, counters);
  const sessions: BenchSession[] = [];
  for (let w = 0; w * PER_WORKER < SESSIONS; w++) {
    const worker = await call(base, 'POST', '/v1/daemon/register', '', { registrationToken: org.registrationToken, hostname: `ingest-${w}`, maxAgents: PER_WORKER });
    const caller = { token: worker.runtimeJwt as string, workerId: worker.workerId as string };
    const ids: string[] = [];
    for (let k = 0; k < PER_WORKER && sessions.length + ids.length < SESSIONS; k++) {
      ids.push((await call(base, 'POST', '/api/agent-dispatch', apiKey, { projectId: org.project.id, prompt: `Build part ${sessions.length + k}` })).sessionId);
    }
    await call(base, 'POST', '/api/daemon/poll', caller.token, { workerId: caller.workerId, capacity: PER_WORKER });
    for (const id of ids) {
      for (const status of ['claimed', 'running']) await call(base, 'POST', `/api/sessions/${id}/status`, caller.token, { workerId: caller.workerId, status });
      const s: BenchSession = {
        index: sessions.length, id, printed: 0, paused: false,
        relay: new OutputRelay(id, api, caller as never, { isRunning: () => true, keepsUnsent: () => true, notHeld: () => { throw new Error(`session ${id} not held`); } }),
      };
      s.relay.onBacklog((full) => { s.paused = full; });
      sessions.push(s);
    }
  }
  return { sessions, apiKey };
}

/** Every session prints RATE lines a second in ticks of 10 ms, unless its relay is backlogged (the agent blocks). */
async function print(sessions: readonly BenchSession[]): Promise<{ seconds: number; pausedTicks: number }> {
  const perTick = RATE * TICK_MS / 1000;
  let pausedTicks = 0;
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(SECONDS * 1000, performance.now() - started) * RATE / 1000;
      for (const s of sessions) {
        if (s.paused) { pausedTicks++; continue; }
        const upTo = Math.min(due, s.printed + perTick * 5);
        while (s.printed < upTo) s.relay.add(`${lineOf(s.index, ++s.printed)}\n`);
      }
      if (performance.now() - started >= SECONDS * 1000) { clearInterval(timer); resolve(); }
    }, TICK_MS);
  });
  return { seconds: (performance.now() - started) / 1000, pausedTicks };
}

/** Each session's output entries, in seq order, are its lines 1..printed: none lost, repeated or out of place. */
async function verify(client: pg.Client, sessions: readonly BenchSession[]): Promise<{ wrong: number; entries: number }> {
  let wrong = 0;
  let entries = 0;
  for (const s of sessions) {
    const { rows } = await client.query(
      `select e.text from session_transcript_entries e join sessions x on x.id = e.session_id
        where x.public_id = $1 and e.kind = 1 order by e.seq`, [s.id]);
    entries += rows.length;
    rows.forEach((r: { text: string }, i: number) => { if (r.text !== lineOf(s.index, i + 1)) wrong++; });
    wrong += Math.abs(rows.length - s.printed);
  }
  return { wrong, entries };
}

/** The same lines as plain batched INSERTs into a table of the same shape, from 8 connections. */
async function plainInserts(total: number, batch: number): Promise<{ perSecond: number; clientCpu: number; postgresCpu: number }> {
  const clients = await Promise.all(Array.from({ length: 8 }, async () => {
    const c = new pg.Client({ connectionString: postgresUrl });
    await c.connect();
    await c.query(`set search_path to "${schema}"`);
    return c;
  }));
  await clients[0]!.query(`create table plain_lines (org_id uuid, session_id text, seq bigint, at timestamptz, kind smallint, run int, text text, data jsonb,
    primary key (org_id, session_id, seq))`);
  const org = '00000000-0000-4000-8000-000000000000';
  let next = 0;
  const cpu0 = selfCpuMs();
  const pg0 = postgresCpuMs();
  const started = performance.now();
  await Promise.all(clients.map(async (c, k) => {
    for (;;) {
      const from = next;
      if (from >= total) return;
      next += batch;
      const texts = Array.from({ length: Math.min(batch, total - from) }, (_, i) => lineOf(k, from + i));
      await c.query(`insert into plain_lines (org_id, session_id, seq, at, kind, text)
        select $1, $2, $3::bigint + v.ord, now(), 1, v.text from unnest($4::text[]) with ordinality as v(text, ord)`, [org, `s${k}`, from, texts]);
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  const result = { perSecond: total / seconds, clientCpu: selfCpuMs() - cpu0, postgresCpu: postgresCpuMs() - pg0 };
  await Promise.all(clients.map((c) => c.end()));
  return result;
}

async function main(): Promise<number> {
  server = await startServer(path.join(root, 'ops/bench/bench-node.ts'), {
    TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info',
    TROUPE_NODE_ID: 'bench-ingest', REDIS_URL: undefined, AMQP_URL: undefined, DATABASE_URL: postgresUrl, TROUPE_DATABASE_SCHEMA: schema,
    TROUPE_RATE_LIMIT_WORKER_OUTPUT_BYTES_PER_MINUTE: '1000000000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
  }, '0', values['cpu-prof'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof']}`]);
  const base = `http://127.0.0.1:${server.port}`;
  const counters = { calls: 0, chunks: 0 };
  const { sessions } = await setUp(base, counters);
  process.stderr.write(`${sessions.length} sessions running; printing ${RATE} lines/s each for ${SECONDS} s...\n`);
  const node0 = ticksOf(server.child.pid!) * 10;
  const pg0 = postgresCpuMs();
  const self0 = selfCpuMs();
  const started = performance.now();
  const printed = await print(sessions);
  await Promise.all(sessions.map((s) => s.relay.sendRest()));
  const seconds = (performance.now() - started) / 1000;
  const nodeCpu = ticksOf(server.child.pid!) * 10 - node0;
  const pgCpu = postgresCpuMs() - pg0;
  const driverCpu = selfCpuMs() - self0;
  const lines = sessions.reduce((n, s) => n + s.printed, 0);

  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  await client.query(`set search_path to "${schema}"`);
  const check = await verify(client, sessions);
  await client.end();
  const meanBatch = Math.max(1, Math.round(counters.chunks / counters.calls));
  process.stderr.write(`plain batched INSERTs of ${lines} lines in batches of ${meanBatch}...\n`);
  const plain = await plainInserts(lines, meanBatch);

  const perK = (ms: number) => (ms / (lines / 1000)).toFixed(1);
  const nodeSide = nodeCpu + pgCpu;
  const plainSide = plain.clientCpu + plain.postgresCpu;
  printTable([
    { measure: 'sessions × lines/s offered × seconds', value: `${SESSIONS} × ${RATE} × ${SECONDS}` },
    { measure: 'lines printed (agents held back while their relay was backlogged)', value: String(lines) },
    { measure: 'lines per second taken, all sessions (first line to last acknowledged)', value: (lines / seconds).toFixed(0) },
    { measure: 'share of offered load printed', value: `${((lines / (SESSIONS * RATE * SECONDS)) * 100).toFixed(1)} %` },
    { measure: 'session-ticks held back by backpressure', value: String(printed.pausedTicks) },
    { measure: 'output calls; mean lines per call', value: `${counters.calls}; ${meanBatch}` },
    { measure: 'transcript entries read back; lines lost, repeated or out of order', value: `${check.entries}; ${check.wrong}` },
    { measure: 'node CPU ms per 1,000 lines', value: perK(nodeCpu) },
    { measure: 'node + Postgres CPU ms per 1,000 lines', value: perK(nodeSide) },
    { measure: 'driver (workers) CPU ms per 1,000 lines', value: perK(driverCpu) },
    { measure: 'plain INSERTs: lines per second', value: plain.perSecond.toFixed(0) },
    { measure: 'plain INSERTs: client CPU ms per 1,000 lines', value: perK(plain.clientCpu) },
    { measure: 'plain INSERTs: client + Postgres CPU ms per 1,000 lines', value: perK(plainSide) },
    { measure: 'ratio node ÷ plain client (goal ≤ 2)', value: (nodeCpu / plain.clientCpu).toFixed(2) },
    { measure: 'ratio node + Postgres ÷ plain client + Postgres (goal ≤ 2)', value: (nodeSide / plainSide).toFixed(2) },
  ]);
  return check.wrong === 0 ? 0 : 1;
}

async function cleanup(): Promise<void> {
  await server?.stop().catch(() => undefined);
  await dropSchema(postgresUrl, schema);
}

runBench(main, cleanup);
