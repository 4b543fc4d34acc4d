// Benchmark (PERFORMANCE.md G1, G1-floor, G2, G3; issue 3 "Speed"): registers N daemons on a node and drives
// POST /api/daemon/heartbeat with their real runtime JWTs (rotating through all of them; some daemons have pending
// mutations each round) and POST /api/sessions/{id}/step-heartbeat, interleaved round by round with the ceiling
// servers of ceilings/uws-post-heartbeat.ts and with a second node whose batched storage writer is a no-op (G3).
// Load comes from wrk (`apt-get install -y wrk`): servers on core 0, `taskset -c 1 wrk -t1 -c100`.
// Prints one table and the median per-round ratios; exits 1 when a goal is missed or a troupe endpoint answered
// anything but 2xx (5xx counted from the node's own metrics).
//   npx tsx ops/bench/heartbeat.ts [--engine embedded|postgres] [--daemons 10000] [--rounds 5] [--duration 10]
//     [--warmup 3] [--connections 100] [--pending-per-round 100] [--cpu-prof <dir>] [--baseline <checkout>]
// --baseline <checkout> (another worktree of this repository, node_modules linked) also starts that checkout's node
// and measures its heartbeat in every round beside this tree's, so a change is compared with its base in one run
// (G1 of each, and this ÷ baseline).
// With --cpu-prof the real node is profiled, and <dir>/windows.jsonl names each measured window (not the warm-ups)
// for ops/bench/cpuprofile-top.ts --windows <dir>/windows.jsonl --name 'troupe heartbeat'.
// Postgres: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) names the server; each node gets
// its own throw-away database there.
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  cpuUs, median, printTable, requireWrk, runWrk, serverErrorCount, startFlags, startServer, ThrowAwayDatabases, windowsRow, writeRequestFile, type MeasuredWindow, type PostRequest, type RunningServer,
} from './harness.js';
import { generateMasterKey } from '../secrets.js';
import { createBenchOrg, heartbeatBody, heartbeatLoadOptions, readHeartbeatLoad, inBatches, postJson, registerDaemons, type BenchOrg, type Daemon } from './daemon-fleet.js';

const { values } = parseArgs({
  options: {
    ...heartbeatLoadOptions,
    'pending-per-round': { type: 'string', default: '100' },
    'cpu-prof': { type: 'string' },
    baseline: { type: 'string' },
  },
});
const { engine, daemonCount, rounds, duration, warmup, connections } = readHeartbeatLoad(values);
const pendingPerRound = Number(values['pending-per-round']);
const postgresUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
requireWrk();

const here = path.dirname(new URL(import.meta.url).pathname);
const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-hb-'));
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;
const masterKey = generateMasterKey();

interface Provisioned { readonly base: string; readonly pid: number | undefined; readonly org: BenchOrg; readonly daemons: Daemon[]; readonly held: Array<{ d: Daemon; sessionId: string }> }

const servers: RunningServer[] = [];
const databases = new ThrowAwayDatabases(postgresUrl, 'troupe_bench');

/** Starts a node (on its own data dir or database) and registers the daemons on it, each heartbeating once. */
async function startNode(label: string, extraEnv: NodeJS.ProcessEnv, nodeArgs: readonly string[] = [], root = path.join(here, '../..')): Promise<Provisioned> {
  const nodeEnv: NodeJS.ProcessEnv = {
    TROUPE_MASTER_KEY: masterKey, TROUPE_DATA_DIR: path.join(workDir, label), PORT: '0', HOST: '127.0.0.1',
    TROUPE_ADMIN_TOKEN: adminToken, TROUPE_LOG_LEVEL: 'info', ...extraEnv,
  };
  if (engine === 'postgres') {
    nodeEnv.DATABASE_URL = await databases.create(label);
  } else {
    delete nodeEnv.DATABASE_URL;
  }
  const node = await startServer(path.join(root, 'ops/main.ts'), nodeEnv, '0', [...startFlags(root), ...nodeArgs]);
  servers.push(node);
  const base = `http://127.0.0.1:${node.port}`;
  const org = await createBenchOrg(base, adminToken);
  process.stderr.write(`${label}: registering ${daemonCount} daemons on ${engine}...\n`);
  const daemons = await registerDaemons(base, org, daemonCount);
  // Sessions held by the first daemons, so step heartbeats land on real rows.
  const held = await inBatches(Math.min(100, daemonCount), 8, async (i) => {
    const d = daemons[i]!;
    const { sessionId } = await postJson(`${base}/api/agent-dispatch`, { token: org.apiKey.fullKey, body: { projectId: org.project.id, prompt: 'bench' } });
    await postJson(`${base}/api/sessions/${sessionId}/status`, { token: d.runtimeJwt, body: { status: 'claimed', workerId: d.workerId } });
    return { d, sessionId: sessionId as string };
  });
  return { base, pid: node.child.pid, org, daemons, held };
}

const heartbeats = (p: Provisioned): PostRequest[] => p.daemons.map((d, i) => ({ path: '/api/daemon/heartbeat', token: d.runtimeJwt, body: heartbeatBody(d, i) }));

interface Target { readonly name: string; readonly url: string; readonly file: string; readonly route?: string; readonly troupe: boolean; readonly pid?: number }
/** A window with the 5xx answers the node counted in it. */
interface Measured extends MeasuredWindow { readonly s5xx: number }


let failed = false;
try {
  const env = { TROUPE_MASTER_KEY: masterKey };
  // The ceilings run with the node's start options too, so a ratio compares code, not V8 settings.
  const ceilingFlags = startFlags(path.join(here, '../..'));
  for (const mode of ['parse', 'cached', 'jose']) servers.push(await startServer(path.join(here, 'ceilings/uws-post-heartbeat.ts'), { ...env, CEILING_MODE: mode }, '0', ceilingFlags));
  const [parse, cached, jose] = servers as [RunningServer, RunningServer, RunningServer];
  const cpuProf = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values['cpu-prof'])}`] : [];
  // Measured windows in CLOCK_MONOTONIC µs, the clock of the profile's timestamps.
  const windowsFile = values['cpu-prof'] ? path.join(path.resolve(values['cpu-prof']), 'windows.jsonl') : undefined;
  if (windowsFile) mkdirSync(path.dirname(windowsFile), { recursive: true });
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
  const real = await startNode('real', {}, cpuProf);
  // G3: the same endpoint with its batched storage writers replaced by no-ops (bench-only switch).
  const noop = await startNode('noop-writer', { TROUPE_BENCH_NOOP_STORAGE_WRITER: '1' });
  const base = values.baseline === undefined ? undefined : await startNode('baseline', {}, [], path.resolve(values.baseline));

  const hbFile = writeRequestFile(path.join(workDir, 'heartbeats.txt'), heartbeats(real));
  const noopFile = writeRequestFile(path.join(workDir, 'heartbeats-noop.txt'), heartbeats(noop));
  const stepFile = writeRequestFile(path.join(workDir, 'steps.txt'), real.held.map((h) => ({
    path: `/api/sessions/${h.sessionId}/step-heartbeat`, token: h.d.runtimeJwt, body: JSON.stringify({ workerId: h.d.workerId }),
  })));
  const HB = '/api/daemon/heartbeat';
  const targets: Target[] = [
    { name: 'ceiling uWS POST parse', url: `http://127.0.0.1:${parse.port}`, file: hbFile, troupe: false, pid: parse.child.pid },
    { name: 'ceiling parse+cached-verify', url: `http://127.0.0.1:${cached.port}`, file: hbFile, troupe: false, pid: cached.child.pid },
    { name: 'ceiling parse+jose (EdDSA)', url: `http://127.0.0.1:${jose.port}`, file: hbFile, troupe: false, pid: jose.child.pid },
    { name: 'troupe heartbeat', url: real.base, file: hbFile, route: HB, troupe: true, pid: real.pid },
    { name: 'troupe heartbeat, no-op writer', url: noop.base, file: noopFile, route: HB, troupe: true, pid: noop.pid },
    { name: 'troupe step-heartbeat', url: real.base, file: stepFile, route: '/api/sessions/:id/step-heartbeat', troupe: true, pid: real.pid },
  ];
  if (base !== undefined) {
    const baseFile = writeRequestFile(path.join(workDir, 'heartbeats-baseline.txt'), heartbeats(base));
    // Right after this tree's heartbeat, so the two are measured as close together as the method allows.
    targets.splice(4, 0, { name: 'baseline heartbeat', url: base.base, file: baseFile, route: HB, troupe: true, pid: base.pid });
  }
  const results = new Map<string, Measured[]>(targets.map((t) => [t.name, []]));
  // G1 read as CPU: the ceiling's CPU per request over the heartbeat's (what req/s shows on a quiet machine).
  const cpuG1: number[] = [];
  // G3 read the same way: the no-op writer's CPU per heartbeat over the real writer's.
  const cpuG3: number[] = [];
  const ratio = { g1: [] as number[], g1floor: [] as number[], g2: [] as number[], g3: [] as number[], baseG1: [] as number[], baseG2: [] as number[], vsBase: [] as number[], cpuVsBase: [] as number[] };
  for (let round = 1; round <= rounds; round++) {
    // Some daemons have mutations waiting when the round starts: those heartbeats go through their actor.
    for (const node of base === undefined ? [real, noop] : [real, noop, base]) {
      await inBatches(Math.min(pendingPerRound, daemonCount), 8, (i) => postJson(`${node.base}/api/daemon/mutations`, {
        token: node.org.userToken,
        body: { workerHostId: node.daemons[(round * 997 + i) % node.daemons.length]!.workerId, op: 'pool.deleted', params: { poolId: `p${round}` } },
      }));
    }
    for (const t of targets) {
      const offset = round * 1009;
      await runWrk({ url: t.url, requestFile: t.file, seconds: warmup, connections, offset });
      const before = t.route ? await serverErrorCount(t.url, t.route) : 0;
      const fromUs = monotonicUs();
      const cpuBefore = cpuUs(t.pid);
      const r = await runWrk({ url: t.url, requestFile: t.file, seconds: duration, connections, offset: offset + 5003 });
      const cpuUsPerRequest = (cpuUs(t.pid) - cpuBefore) / Math.max(1, r.rps * duration);
      if (windowsFile) appendFileSync(windowsFile, `${JSON.stringify({ name: t.name, round, fromUs, toUs: monotonicUs() })}\n`);
      const s5xx = t.route ? (await serverErrorCount(t.url, t.route)) - before : 0;
      results.get(t.name)!.push({ ...r, s5xx, cpuUsPerRequest });
      process.stderr.write(`round ${round}/${rounds} ${t.name}: ${Math.round(r.rps)} req/s p50 ${r.p50Ms} ms p99 ${r.p99Ms} ms non2xx ${r.non2xx} 5xx ${s5xx} errors ${r.errors}`
        + `${Number.isNaN(cpuUsPerRequest) ? '' : ` node CPU ${cpuUsPerRequest.toFixed(2)} µs/request`}\n`);
    }
    const last = (name: string) => results.get(name)!.at(-1)!;
    const hb = last('troupe heartbeat');
    ratio.g1.push(hb.rps / last('ceiling parse+cached-verify').rps);
    ratio.g1floor.push(hb.rps / last('ceiling parse+jose (EdDSA)').rps);
    ratio.g2.push(hb.p99Ms / Math.max(0.01, last('ceiling parse+cached-verify').p99Ms));
    ratio.g3.push(hb.rps / last('troupe heartbeat, no-op writer').rps);
    cpuG1.push(last('ceiling parse+cached-verify').cpuUsPerRequest / hb.cpuUsPerRequest);
    cpuG3.push(last('troupe heartbeat, no-op writer').cpuUsPerRequest / hb.cpuUsPerRequest);
    if (base !== undefined) {
      const theirs = last('baseline heartbeat');
      ratio.baseG1.push(theirs.rps / last('ceiling parse+cached-verify').rps);
      ratio.baseG2.push(theirs.p99Ms / Math.max(0.01, last('ceiling parse+cached-verify').p99Ms));
      ratio.vsBase.push(hb.rps / theirs.rps);
      ratio.cpuVsBase.push(hb.cpuUsPerRequest / theirs.cpuUsPerRequest);
    }
  }
  console.log(`\nengine ${engine}, ${daemonCount} daemons, ${rounds} rounds of ${duration}s (+${warmup}s warm-up), wrk -t1 -c${connections}; server core 0, wrk core 1`);
  printTable([...results].map(([name, rs]) => ({ config: name, ...windowsRow(rs), '5xx': rs.reduce((n, r) => n + r.s5xx, 0) })));
  const goals = [
    { goal: 'G1 heartbeat / parse+cached-verify', values: ratio.g1, ok: (v: number) => v >= 0.6, want: '>= 0.60 (stretch 0.75)' },
    { goal: 'G1-floor heartbeat / parse+jose', values: ratio.g1floor, ok: (v: number) => v >= 2.0, want: '>= 2.0' },
    { goal: 'G2 heartbeat p99 / cached p99', values: ratio.g2, ok: (v: number) => v <= 3, want: '<= 3' },
    { goal: 'G3 heartbeat / no-op writer', values: ratio.g3, ok: (v: number) => v >= 0.9, want: '>= 0.90' },
  ];
  console.log(`\nG1 as node CPU per request (cached-verify ceiling ÷ heartbeat): median ${median(cpuG1).toFixed(2)}, rounds ${cpuG1.map((v) => v.toFixed(2)).join(' ')}`);
  console.log(`G3 as node CPU per request (no-op writer ÷ heartbeat): median ${median(cpuG3).toFixed(2)}, rounds ${cpuG3.map((v) => v.toFixed(2)).join(' ')}`);
  console.log('');
  printTable(goals.map((g) => ({
    goal: g.goal, 'median ratio': median(g.values), rounds: g.values.map((v) => v.toFixed(2)).join(' '), wanted: g.want, met: g.ok(median(g.values)) ? 'yes' : 'NO',
  })));
  if (base !== undefined) {
    console.log(`\nbaseline ${path.resolve(values.baseline!)}, same rounds:`);
    printTable([
      { figure: 'baseline G1 heartbeat / parse+cached-verify', 'median ratio': median(ratio.baseG1), rounds: ratio.baseG1.map((v) => v.toFixed(2)).join(' ') },
      { figure: 'baseline G2 heartbeat p99 / cached p99', 'median ratio': median(ratio.baseG2), rounds: ratio.baseG2.map((v) => v.toFixed(2)).join(' ') },
      { figure: 'this heartbeat / baseline heartbeat (req/s)', 'median ratio': median(ratio.vsBase), rounds: ratio.vsBase.map((v) => v.toFixed(2)).join(' ') },
      { figure: 'this / baseline node CPU per heartbeat', 'median ratio': median(ratio.cpuVsBase), rounds: ratio.cpuVsBase.map((v) => v.toFixed(2)).join(' ') },
    ]);
  }
  const bad = [...results].filter(([name, rs]) => targets.find((t) => t.name === name)!.troupe && rs.some((r) => r.s5xx > 0 || r.non2xx > 0 || r.errors > 0));
  for (const [name] of bad) console.log(`${name} answered non-2xx (or dropped connections)`);
  failed = bad.length > 0 || goals.some((g) => !g.ok(median(g.values)));
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  await databases.dropAll();
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
