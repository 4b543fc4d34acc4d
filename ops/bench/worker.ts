// Benchmark of `troupe worker` (issue 15, G9b): what a worker holding 200 idle sessions costs (CPU share of one core
// and RSS of the worker process, agents excluded), and how long dispatch → agent process started takes on an idle
// worker with free capacity (p50 ≤ 25 ms, p99 ≤ 100 ms). A real node (on the machine's Postgres in a schema of its
// own, or `--engine embedded` for PGlite) runs on core 0; the worker on core 1 with this driver.
//
//   npx tsx ops/bench/worker.ts [--engine postgres|embedded] [--idle 200] [--samples 100] [--measure 30]
//
// The agent of the idle part is `sleep 3600`; the agent of the latency part is `date +%s%N >> FILE`, so "started" is
// the wall-clock moment the agent's command ran (sh and date started), compared with the moment the driver sent
// `POST /api/agent-dispatch`. Exits 1 when a goal is missed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../secrets.js';
import { call, pct, printTable, startServer, type RunningServer } from './harness.js';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'postgres' },
    idle: { type: 'string', default: '200' },
    samples: { type: 'string', default: '100' },
    measure: { type: 'string', default: '30' },
  },
});
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const postgresUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const idleCount = Number(values.idle);
const samples = Number(values.samples);
const measureSeconds = Number(values.measure);
const adminToken = generateAdminToken();
const schema = `bench_worker_${randomBytes(4).toString('hex')}`;
const work = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-worker-'));
spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });

const children: ChildProcess[] = [];
const agentGroups = new Set<number>();
let server: RunningServer | undefined;

interface WorkerRun { child: ChildProcess; started: number; waitStarted(n: number, timeoutMs: number): Promise<void> }

function startWorker(base: string, registrationToken: string, capacity: number, agentCommand: string, name: string): WorkerRun {
  // Run as users run it (`npx troupe worker` executes bin.js by its #! line, which sets node's flags).
  const child = spawn('taskset', ['-c', '1', path.join(root, 'ops/cli/bin.js'), 'worker',
    '--url', base, '--registration-token', registrationToken, '--agent-command', agentCommand, '--capacity', String(capacity),
    '--name', name, '--state-dir', path.join(work, name), '--log-format', 'json', '--drain-timeout', '0'], {
    env: { ...process.env, TROUPE_WORKER_KILL_GRACE_MS: '1000' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const run: WorkerRun = {
    child, started: 0,
    waitStarted: (n, timeoutMs) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: ${run.started} of ${n} agents started in ${timeoutMs} ms`)), timeoutMs);
      const check = setInterval(() => { if (run.started >= n) { clearTimeout(timer); clearInterval(check); resolve(); } }, 20);
    }),
  };
  createInterface({ input: child.stderr! }).on('line', (line) => {
    try {
      const l = JSON.parse(line) as { event?: string; level?: string; msg?: string; pid?: number };
      if (l.event === 'session.started') {
        run.started++;
        if (typeof l.pid === 'number') agentGroups.add(l.pid);
      }
      if (l.level === 'error') process.stderr.write(`${name}: ${l.msg}\n`);
    } catch { /* not JSON */ }
  });
  return run;
}

async function stopWorker(w: WorkerRun): Promise<void> {
  if (w.child.exitCode !== null) return;
  const gone = new Promise((r) => w.child.once('exit', r));
  w.child.kill('SIGTERM');
  const timer = setTimeout(() => w.child.kill('SIGKILL'), 20_000);
  await gone;
  clearTimeout(timer);
}

/** utime + stime of a process, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function main(): Promise<number> {
  const env: NodeJS.ProcessEnv = {
    TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info',
    TROUPE_NODE_ID: 'bench-worker', REDIS_URL: undefined, AMQP_URL: undefined,
    TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
    ...(values.engine === 'embedded'
      ? { DATABASE_URL: undefined, TROUPE_DATA_DIR: path.join(work, 'node') }
      : { DATABASE_URL: postgresUrl, TROUPE_DATABASE_SCHEMA: schema }),
  };
  process.stderr.write(`starting a node (${values.engine})...\n`);
  server = await startServer(path.join(root, 'ops/bench/bench-node.ts'), env, '0');
  const base = `http://127.0.0.1:${server.port}`;
  const org = await call(base, 'POST', '/api/admin/orgs', adminToken, { name: 'Bench', owner: { email: 'bench@bench.test' } });
  const dispatch = () => call(base, 'POST', '/api/agent-dispatch', org.apiKey.fullKey, { projectId: org.project.id, prompt: 'Fix the flaky test in the billing module' });

  // 1. Dispatch → agent started, on an idle worker with free capacity: one session at a time.
  const starts = path.join(work, 'starts');
  const fast = startWorker(base, org.registrationToken, 8, `date +%s%N >> ${starts}`, 'latency');
  await new Promise((r) => setTimeout(r, 3000));
  const latencies: number[] = [];
  // The dispatch call's own round trip: the floor under dispatch → started, whatever the worker does.
  const dispatchCalls: number[] = [];
  process.stderr.write(`dispatch → agent started, ${samples} samples...\n`);
  for (let i = 0; i < samples + 5; i++) {
    const sentNs = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
    const sent = performance.now();
    await dispatch();
    if (i >= 5) dispatchCalls.push(performance.now() - sent);
    const deadline = Date.now() + 10_000;
    let lines: string[] = [];
    while ((lines = existsSync(starts) ? readFileSync(starts, 'utf8').trim().split('\n') : []).length <= i) {
      if (Date.now() > deadline) throw new Error(`sample ${i}: the agent did not start within 10 s`);
      await new Promise((r) => setTimeout(r, 1));
    }
    // The first five warm the worker's connections and the node's caches.
    if (i >= 5) latencies.push(Number(BigInt(lines[i]!) - sentNs) / 1e6);
    await new Promise((r) => setTimeout(r, 30));
  }
  await stopWorker(fast);

  // 2. A worker holding `idleCount` idle sessions.
  process.stderr.write(`${idleCount} idle sessions...\n`);
  const idle = startWorker(base, org.registrationToken, idleCount, 'sleep 3600', 'idle');
  await new Promise((r) => setTimeout(r, 2000));
  for (let i = 0; i < idleCount; i += 20) await Promise.all(Array.from({ length: Math.min(20, idleCount - i) }, () => dispatch()));
  await idle.waitStarted(idleCount, 120_000);
  await new Promise((r) => setTimeout(r, 5000));
  const pid = idle.child.pid!;
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  process.stderr.write(`measuring the idle worker for ${measureSeconds} s...\n`);
  let rssMax = 0;
  while (performance.now() - t0 < measureSeconds * 1000) {
    rssMax = Math.max(rssMax, rssMb(pid));
    await new Promise((r) => setTimeout(r, 500));
  }
  const cpuShare = ((cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000)) * 100;
  await stopWorker(idle);

  const p50 = pct(latencies, 50);
  const p99 = pct(latencies, 99);
  printTable([
    { figure: 'dispatch → agent started p50 (ms)', value: p50.toFixed(1), goal: '≤ 25', met: p50 <= 25 ? 'yes' : 'NO' },
    { figure: 'dispatch → agent started p99 (ms)', value: p99.toFixed(1), goal: '≤ 100', met: p99 <= 100 ? 'yes' : 'NO' },
    { figure: 'the dispatch call alone p50 / p99 (ms)', value: `${pct(dispatchCalls, 50).toFixed(1)} / ${pct(dispatchCalls, 99).toFixed(1)}`, goal: '(floor)', met: '' },
    { figure: `worker CPU, ${idleCount} idle sessions (% of a core)`, value: cpuShare.toFixed(2), goal: '≤ 1', met: cpuShare <= 1 ? 'yes' : 'NO' },
    { figure: `worker RSS, ${idleCount} idle sessions (MB, max)`, value: rssMax.toFixed(1), goal: '≤ 100', met: rssMax <= 100 ? 'yes' : 'NO' },
  ]);
  process.stdout.write(`samples ${latencies.length}; latency min ${Math.min(...latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms; engine ${values.engine}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}\n`);
  return p50 <= 25 && p99 <= 100 && cpuShare <= 1 && rssMax <= 100 ? 0 : 1;
}

async function cleanup(): Promise<void> {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  // A worker drained with --drain-timeout 0 ends its agents; one that had to be SIGKILLed leaves them, so the
  // process groups it reported starting are ended here, by id.
  for (const pid of agentGroups) { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }
  await server?.stop();
  if (values.engine !== 'embedded') {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try { await client.query(`drop schema if exists "${schema}" cascade`); } finally { await client.end(); }
  }
  rmSync(work, { recursive: true, force: true });
}

let code = 1;
try {
  code = await main();
} catch (err) {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
} finally {
  await cleanup();
}
process.exit(code);
