// Benchmark (issue 34 §5), end to end: dispatch → agent started for sessions on a repository of 10,000 files and
// 1,000 commits with a warm mirror, through a real node and a real `troupe worker`: the offer, the claim, the
// session's worktree prepared (fetch, ref, the branch's tree) and the agent's spawn in it. Goal: p50 ≤ 150 ms,
// p99 ≤ 400 ms. A node (on the machine's Postgres in a schema of its own, or `--engine embedded` for PGlite) runs on
// core 0; the worker, its git and this driver on core 1.
//
//   npx tsx ops/bench/worker-repository.ts [--engine postgres|embedded] [--samples 50] [--files 10000] [--commits 1000]
//
// The agent is `date +%s%N >> FILE`, run in the session's worktree: "started" is the wall-clock moment it ran,
// compared with the moment the driver sent `POST /api/agent-dispatch`. A few first sessions, not measured, give the
// worker its mirror. Sessions then run one at a time, each awaited to completion and the worker's background git
// work (its spare tree) to settle, and every 5 of them a teammate's commit of 10 files lands on origin's main, so
// starts also fetch a moved tip. Where the time goes comes from the worker's own log (`session.claimed`,
// `workspace.ready`, `session.started`). Exits 1 when the goal is missed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../secrets.js';
import { advanceMain, makeOrigin } from './git-origin.js';
import { call, pct, printTable, startServer, type RunningServer } from './harness.js';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'postgres' },
    samples: { type: 'string', default: '50' },
    files: { type: 'string', default: '10000' },
    commits: { type: 'string', default: '1000' },
  },
});
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const postgresUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const samples = Number(values.samples);
const fileCount = Number(values.files);
const commitCount = Number(values.commits);
const GOAL = { p50: 150, p99: 400 };
const WARM_UP_SESSIONS = 3;
const ADVANCE_EVERY = 5;
// Longer than the 1.1 s a spare tree waits between its checkout and its index refresh (git's racy-clean window).
const SETTLED_AFTER_QUIET_MS = 1500;
const adminToken = generateAdminToken();
const schema = `bench_worker_repo_${randomBytes(4).toString('hex')}`;
const work = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-worker-repository-'));
const originDir = path.join(work, 'origin.git');
spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });

const children: ChildProcess[] = [];
const agentGroups = new Set<number>();
let server: RunningServer | undefined;

/** Wall-clock ms of the worker's log events of one session. */
interface SessionMarks { claimed?: number; workspaceReady?: number; started?: number }

interface WorkerRun { child: ChildProcess; readonly marks: Map<string, SessionMarks>; registered: Promise<void> }

function startWorker(base: string, registrationToken: string, agentCommand: string): WorkerRun {
  // Run as users run it (`npx troupe worker` executes bin.js by its #! line, which sets node's flags).
  const child = spawn('taskset', ['-c', '1', path.join(root, 'ops/cli/bin.js'), 'worker',
    '--url', base, '--registration-token', registrationToken, '--agent-command', agentCommand, '--capacity', '4',
    '--name', 'repository', '--state-dir', path.join(work, 'state'), '--work-dir', path.join(work, 'work'),
    '--log-format', 'json', '--drain-timeout', '0'], {
    env: { ...process.env, TROUPE_WORKER_KILL_GRACE_MS: '1000', TROUPE_ALLOW_FILE_REPOSITORIES: '1' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const marks = new Map<string, SessionMarks>();
  let registered!: () => void;
  const run: WorkerRun = { child, marks, registered: new Promise((r) => { registered = r; }) };
  createInterface({ input: child.stderr! }).on('line', (line) => {
    let l: { time?: string; event?: string; level?: string; msg?: string; pid?: number; sessionId?: string };
    try { l = JSON.parse(line); } catch { return; }
    if (l.event === 'worker.registered') registered();
    if (l.level === 'error') process.stderr.write(`worker: ${l.event}: ${l.msg}\n`);
    if (typeof l.sessionId !== 'string' || l.time === undefined) return;
    const at = Date.parse(l.time);
    const m = marks.get(l.sessionId) ?? {};
    if (l.event === 'session.claimed') m.claimed = at;
    if (l.event === 'workspace.ready') m.workspaceReady = at;
    if (l.event === 'session.started') {
      m.started = at;
      if (typeof l.pid === 'number') agentGroups.add(l.pid);
    }
    marks.set(l.sessionId, m);
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

const nowNs = (): bigint => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function untilEnded(base: string, apiKey: string, sessionId: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await call(base, 'GET', `/api/public/sessions/${sessionId}`, apiKey);
    if (d.status === 'completed') return;
    if (d.status === 'failed') throw new Error(`session ${sessionId} failed: ${d.error ?? JSON.stringify(d.output?.tail ?? '')}`);
    if (Date.now() > deadline) throw new Error(`session ${sessionId} is ${d.status} after ${timeoutMs} ms`);
    await sleep(50);
  }
}

async function untilAgentLine(starts: string, index: number, timeoutMs: number): Promise<bigint> {
  const deadline = Date.now() + timeoutMs;
  let lines: string[] = [];
  while ((lines = existsSync(starts) ? readFileSync(starts, 'utf8').trim().split('\n') : []).length <= index) {
    if (Date.now() > deadline) throw new Error(`session ${index}: the agent did not start within ${timeoutMs} ms`);
    await sleep(1);
  }
  return BigInt(lines[index]!);
}

/** One measured session: when the dispatch was sent (ms) and how long until its agent ran and its call answered. */
interface Sample { sessionId: string; sentMs: number; latencyMs: number; dispatchCallMs: number }

interface Bench { base: string; apiKey: string; projectId: string; starts: string; workerPid: number }

/** Whether a git runs anywhere under `pid` (a fetch, a checkout, the spare tree being made). */
function gitUnder(pid: number): boolean {
  const pending = [pid];
  while (pending.length > 0) {
    const parent = pending.pop()!;
    let tasks: string[] = [];
    try { tasks = readdirSync(`/proc/${parent}/task`); } catch { continue; }
    for (const task of tasks) {
      let childPids: number[] = [];
      try { childPids = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number); } catch { continue; }
      for (const child of childPids) {
        try { if (readFileSync(`/proc/${child}/comm`, 'utf8').startsWith('git')) return true; } catch { /* gone */ }
        pending.push(child);
      }
    }
  }
  return false;
}

/**
 * Sessions that arrive one at a time arrive seconds apart, and find the worker's background git work done: above
 * all the repository's spare tree, made after each start (decision 0074). A worker is settled once no git ran under
 * it for `SETTLED_AFTER_QUIET_MS`. On a machine where writing 10,000 files takes seconds, a fixed pause would time
 * the starts that overtook the spare, which is the burst case, not this one.
 */
async function untilSettled(pid: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  let quietSince = Date.now();
  while (Date.now() - quietSince < SETTLED_AFTER_QUIET_MS) {
    if (gitUnder(pid)) quietSince = Date.now();
    if (Date.now() > deadline) throw new Error('the worker still runs git 120 s after its session ended');
    await sleep(20);
  }
}

async function runSession(b: Bench, index: number, timeoutMs: number): Promise<Sample> {
  const sentNs = nowNs();
  const sent = performance.now();
  const { sessionId } = await call(b.base, 'POST', '/api/agent-dispatch', b.apiKey, { projectId: b.projectId, prompt: 'Fix the flaky test in the billing module', repository: 'bench' });
  const dispatchCallMs = performance.now() - sent;
  const ranNs = await untilAgentLine(b.starts, index, timeoutMs);
  await untilEnded(b.base, b.apiKey, sessionId as string, timeoutMs);
  return { sessionId, sentMs: Number(sentNs / 1_000_000n), latencyMs: Number(ranNs - sentNs) / 1e6, dispatchCallMs };
}

async function measure(b: Bench): Promise<Sample[]> {
  process.stderr.write(`${WARM_UP_SESSIONS} warm-up sessions (the worker clones its mirror)...\n`);
  for (let i = 0; i < WARM_UP_SESSIONS; i++) {
    await runSession(b, i, 120_000);
    await untilSettled(b.workerPid);
  }
  process.stderr.write(`dispatch → agent started, ${samples} sessions...\n`);
  const measured: Sample[] = [];
  for (let n = 0; n < samples; n++) {
    if (n > 0 && n % ADVANCE_EVERY === 0) await advanceMain(originDir, fileCount, n);
    measured.push(await runSession(b, WARM_UP_SESSIONS + n, 30_000));
    await untilSettled(b.workerPid);
  }
  return measured;
}

async function startNode(): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info',
    TROUPE_NODE_ID: 'bench-worker-repository', REDIS_URL: undefined, AMQP_URL: undefined, TROUPE_ALLOW_FILE_REPOSITORIES: '1',
    TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
    ...(values.engine === 'embedded'
      ? { DATABASE_URL: undefined, TROUPE_DATA_DIR: path.join(work, 'node') }
      : { DATABASE_URL: postgresUrl, TROUPE_DATABASE_SCHEMA: schema }),
  };
  process.stderr.write(`starting a node (${values.engine})...\n`);
  server = await startServer(path.join(root, 'ops/bench/bench-node.ts'), env, '0');
  return `http://127.0.0.1:${server.port}`;
}

const ms = (values: readonly number[]) => `${pct(values, 50).toFixed(1)} / ${pct(values, 99).toFixed(1)}`;

/** Each sample's time split at the worker's log events; a sample missing one is left out of the split. */
function phases(measured: readonly Sample[], marks: ReadonlyMap<string, SessionMarks>): Record<string, string | number>[] {
  const split = measured.flatMap((s, n) => {
    const m = marks.get(s.sessionId);
    if (m?.claimed === undefined || m.workspaceReady === undefined || m.started === undefined) return [];
    const x = { claim: m.claimed - s.sentMs, workspace: m.workspaceReady - m.claimed, spawn: m.started - m.workspaceReady, run: s.sentMs + s.latencyMs - m.started };
    process.stderr.write(`session ${n}: ${s.latencyMs.toFixed(1)} ms = claim ${x.claim} + workspace ${x.workspace} + spawn ${x.spawn} + run ${x.run.toFixed(1)}\n`);
    return [x];
  });
  const row = (phase: string, of: (x: (typeof split)[number]) => number) => ({ phase, 'p50 / p99 (ms)': ms(split.map(of)), sessions: split.length });
  return [
    row('dispatch sent → session.claimed (offer, claim)', (x) => x.claim),
    row('session.claimed → workspace.ready (prepareWorkspace)', (x) => x.workspace),
    row('workspace.ready → session.started (spawn)', (x) => x.spawn),
    row('session.started → agent ran (sh, date)', (x) => x.run),
  ];
}

function report(measured: readonly Sample[], marks: ReadonlyMap<string, SessionMarks>, loadAtStart: string): boolean {
  const latencies = measured.map((s) => s.latencyMs);
  const p50 = pct(latencies, 50);
  const p99 = pct(latencies, 99);
  printTable([
    { figure: 'dispatch → agent started p50 (ms)', value: p50.toFixed(1), goal: `≤ ${GOAL.p50}`, met: p50 <= GOAL.p50 ? 'yes' : 'NO' },
    { figure: 'dispatch → agent started p99 (ms)', value: p99.toFixed(1), goal: `≤ ${GOAL.p99}`, met: p99 <= GOAL.p99 ? 'yes' : 'NO' },
    { figure: 'the dispatch call alone p50 / p99 (ms)', value: ms(measured.map((s) => s.dispatchCallMs)), goal: '(floor)', met: '' },
  ]);
  printTable(phases(measured, marks));
  const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
  process.stdout.write(`samples ${latencies.length}; latency min ${Math.min(...latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms; `
    + `origin ${fileCount} files, ${commitCount} commits; engine ${values.engine}; load average ${loadAtStart} at the start, ${load} at the end (${os.cpus().length} cores)\n`);
  return p50 <= GOAL.p50 && p99 <= GOAL.p99;
}

async function main(): Promise<number> {
  const loadAtStart = os.loadavg().map((l) => l.toFixed(1)).join(' ');
  const began = performance.now();
  await makeOrigin(originDir, fileCount, commitCount);
  process.stderr.write(`origin: ${fileCount} files, ${commitCount} commits, made in ${Math.round(performance.now() - began)} ms\n`);
  const base = await startNode();
  const org = await call(base, 'POST', '/api/admin/orgs', adminToken, { name: 'Bench', owner: { email: 'bench@bench.test' } });
  const apiKey = org.apiKey.fullKey as string;
  await call(base, 'POST', `/api/projects/${org.project.id}/repositories`, apiKey, { url: pathToFileURL(originDir).href, name: 'bench' });
  const starts = path.join(work, 'starts');
  const worker = startWorker(base, org.registrationToken, `date +%s%N >> ${starts}`);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([worker.registered, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('the worker did not register within 30 s')), 30_000); })]);
  clearTimeout(timer);
  // Its event stream opens after it registered: a dispatch sent before then waits for the next poll.
  await sleep(2000);
  const measured = await measure({ base, apiKey, projectId: org.project.id, starts, workerPid: worker.child.pid! });
  await stopWorker(worker);
  return report(measured, worker.marks, loadAtStart) ? 0 : 1;
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
