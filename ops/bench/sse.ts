// Benchmark (PERFORMANCE.md G6, issue 3 "SSE fan-out"): N streams (default 10,000) on the credential rotate stream
// `GET /api/daemon/credentials/stream` (runtime JWTs of daemons registered in a few orgs; a rotation is a per-org
// broadcast) against a uWS SSE ceiling (ceilings/uws-sse.ts) broadcasting to the same number of groups, interleaved
// round by round. Servers run in their own process pinned to core 0; this process is the load and pins itself to
// core 1. Clients are raw sockets (a GET written by hand, frames counted by their `data: ` lines): fetch would cost
// more than the servers being measured.
// Per round and server: memory per stream (VmRSS less the JS heap's unused committed space, and the live JS heap plus
// external memory, before and after opening the second half of the streams, each read after a full collection the
// server runs on SIGUSR2, see gc-on-signal.mjs; the figure is the larger of the two deltas, see `perStream`), delivered events/s while the
// server publishes as fast as it can (the node: concurrent `POST /api/daemon/credentials/rotate` calls through the
// real route, cycling orgs), and the latency from the publish call to the frame on each stream of the group; then,
// with all of them still open, the latency to the one stream of an org that has a single daemon (`--lone-probes`
// events), which is what a daemon of a small org sees: a broadcast to 1,000 streams takes, on these VMs, as long as
// the kernel needs for 1,000 loopback sends, whoever makes them (the ceiling's own p99 reads 40 to 120 ms).
// Prints one table and the goals; exits 1 when a goal is missed.
//   npx tsx ops/bench/sse.ts [--streams 10000] [--orgs 10] [--daemons-per-org 10] [--rounds 3] [--duration 5]
//     [--probes 20] [--lone-probes 100] [--concurrency 16] [--cpu-prof <dir>] [--baseline <checkout>]
// --baseline <checkout> (another worktree of this repository, node_modules linked) measures that checkout's node too,
// in every round right after this tree's, and prints its event rate / ceiling and p99 beside this tree's.
// With --cpu-prof the node is profiled, and <dir>/windows.jsonl names each round's latency probes and publishing
// window ('troupe rotate stream probes', 'troupe rotate stream publishing') for ops/bench/cpuprofile-top.ts --windows.
// File descriptors: this process and each server hold one per stream; the script raises its own and its
// children's soft `nofile` limit to the hard limit with prlimit(1) and refuses to run when that is too low.
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, printTable, startFlags, startServer, type RunningServer } from './harness.js';
import { generateMasterKey } from '../secrets.js';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '10000' },
    orgs: { type: 'string', default: '10' },
    'daemons-per-org': { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    probes: { type: 'string', default: '20' },
    'lone-probes': { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '16' },
    'cpu-prof': { type: 'string' },
    baseline: { type: 'string' },
  },
});
const streamCount = Number(values.streams);
const orgCount = Number(values.orgs);
const daemonsPerOrg = Number(values['daemons-per-org']);
const rounds = Number(values.rounds);
const duration = Number(values.duration);
const probes = Number(values.probes);
const loneProbes = Number(values['lone-probes']);
const concurrency = Number(values.concurrency);
for (const [name, v] of Object.entries({ streamCount, orgCount, daemonsPerOrg, rounds, duration, probes, loneProbes, concurrency })) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer`);
}

const now = () => performance.timeOrigin + performance.now();
// Measured windows in CLOCK_MONOTONIC µs (the clock of a .cpuprofile's timestamps), written with --cpu-prof.
const windowsFile = values['cpu-prof'] ? path.join(path.resolve(values['cpu-prof']), 'windows.jsonl') : undefined;
if (windowsFile) mkdirSync(path.dirname(windowsFile), { recursive: true });
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
function measured(name: string, fromUs: number): void {
  if (windowsFile) appendFileSync(windowsFile, `${JSON.stringify({ name, fromUs, toUs: monotonicUs() })}\n`);
}

// Load on core 1, all threads; raise the fd limit of this process (children inherit it).
spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const hard = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim();
spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${hard}:${hard}`], { stdio: 'ignore' });
const soft = Number(spawnSync('prlimit', ['--pid', String(process.pid), '--nofile', '--noheadings', '--output=SOFT'], { encoding: 'utf8' }).stdout.trim());
if (!(soft >= streamCount + 1000)) {
  process.stderr.write(`open-file limit ${soft} is too low for ${streamCount} streams; raise it (ulimit -n ${streamCount + 1000}) and rerun\n`);
  process.exit(2);
}

const here = path.dirname(new URL(import.meta.url).pathname);
// Both servers get a young generation of fixed size: V8 grows it from 1 MB to 16 MB per semi-space under allocation
// pressure and shrinks it when idle, a process-wide swing of up to ~30 MB that is no stream's memory but moved the
// per-stream RSS reading by 3 KB from one round to the next. Fixed, the readings count what the streams hold.
const gcOnSignal = ['--expose-gc', '--min-semi-space-size=16', '--max-semi-space-size=16', '--import', path.join(here, 'gc-on-signal.mjs')];
const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-sse-'));
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;
const masterKey = generateMasterKey();

/** One raw-socket SSE client: counts frames (`data: ` lines) and remembers when the last one arrived. */
class SseSocket {
  frames = 0;
  lastArrival = 0;
  closed = false;
  /** The frame count at which this stream has the probe event it is waiting for; 0 when not waiting. */
  waiting = 0;
  constructor(readonly socket: net.Socket, readonly group: number) {}
}

/**
 * The client reads with `onread` into one buffer shared by every socket: with 'data' events each read went through
 * Node's stream machinery and a fresh Buffer, ~20 µs a socket on this machine, so a probe to a group of 1,000 streams
 * measured mostly this process working through its own sockets (the ceiling's p99 read 42 to 83 ms).
 */
const sharedReadBuffer = Buffer.allocUnsafe(64 * 1024);
const DATA_LINE = Buffer.from('data: ');

function openStream(port: number, target: string, token: string | undefined, group: number, onFrame: (s: SseSocket) => void, openMarker: string): Promise<SseSocket> {
  return new Promise((resolve, reject) => {
    let s: SseSocket;
    let head = '';
    let opened = false;
    const onRead = (nread: number, buf: Buffer): boolean => {
      if (!opened) {
        head += buf.toString('latin1', 0, nread);
        if (!head.startsWith('HTTP/1.1 200')) {
          if (head.includes('\r\n\r\n')) { clearTimeout(timer); socket.destroy(); reject(new Error(`stream ${target}: ${head.slice(0, 200)}`)); }
          return true;
        }
        if (!head.includes(openMarker)) return true;
        opened = true;
        head = '';
        clearTimeout(timer);
        resolve(s);
        return true;
      }
      const arrived = now();
      let n = 0;
      const chunk = buf.subarray(0, nread);
      for (let at = chunk.indexOf(DATA_LINE); at >= 0; at = chunk.indexOf(DATA_LINE, at + 6)) n++;
      if (n > 0) {
        s.frames += n;
        s.lastArrival = arrived;
        onFrame(s);
      }
      return true;
    };
    const socket = net.connect({ port, host: '127.0.0.1', onread: { buffer: sharedReadBuffer, callback: onRead } } as net.NetConnectOpts);
    s = new SseSocket(socket, group);
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`stream ${target} did not open in 60 s`)); }, 60_000);
    socket.setNoDelay(true);
    socket.on('connect', () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n${token ? `Authorization: Bearer ${token}\r\n` : ''}\r\n`);
    });
    socket.on('error', () => {});
    socket.on('close', () => { s.closed = true; if (!opened) { clearTimeout(timer); reject(new Error(`stream ${target} closed before opening`)); } });
  });
}

async function inBatches<T>(count: number, width: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) { const i = next++; out[i] = await work(i); }
  }));
  return out;
}

async function call(method: string, url: string, token: string | undefined, body?: unknown): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What one server needs to be measured the same way as the other. */
interface Subject {
  readonly name: string;
  readonly server: RunningServer;
  /** Where the server writes its memory reading on SIGUSR2 (BENCH_MEMORY_FILE). */
  readonly memoryFile: string;
  /** Path and token of stream i, and the group (org) it belongs to. */
  stream(i: number): { target: string; token?: string; group: number };
  /** The one stream of a group of its own (group `orgCount`): an org with a single daemon. */
  loneStream(): { target: string; token?: string; group: number };
  readonly openMarker: string;
  /** Publishes one event to a group. */
  publishOnce(group: number): Promise<void>;
  /** Publishes as fast as it can for `seconds`. */
  blast(seconds: number): Promise<void>;
}

interface RoundResult {
  /** The figure G6 counts: max(residentPerStreamKb, livePerStreamKb), never negative (see `perStream`). */
  perStreamKb: number;
  rssPerStreamKb: number; residentPerStreamKb: number; livePerStreamKb: number; heapTotalPerStreamKb: number; eventsPerSecond: number; p50Ms: number; p99Ms: number; lost: number; opened: number;
  /** Publish → frame on the one stream of a single-daemon org, with every other stream open. */
  loneP50Ms: number; loneP99Ms: number;
}

/**
 * What a stream costs. The RSS delta counts native memory too (uWS socket state), but V8's heap reservation moves
 * it: the heap grows its committed space in steps, and keeps or returns pages it no longer uses, a swing of up to
 * ~25 MB between two readings whatever the streams hold (rounds of the same tree read -4.3 and 5.2 KB a stream).
 * `residentKb` is the RSS delta less the change in the heap's committed-but-unused space (heapTotal - heapUsed,
 * after a full collection): what the process holds, native memory included, without the collector's spare room.
 * The live heap plus external memory cannot shrink as streams are added, since the open streams hold everything
 * they allocated; it misses native memory. The larger of the two is never below what the streams hold in the JS
 * heap, and counts their native memory whenever the allocator does not hand back old pages between the readings.
 */
function perStream(residentKb: number, liveKb: number): number {
  return Math.max(residentKb, liveKb, 0);
}

interface MemoryReading { readonly rssKb: number; readonly liveKb: number; readonly heapTotalKb: number; readonly heapFreeKb: number }

/**
 * Memory after a full collection in the server (gc-on-signal.mjs): VmRSS, and the live JS heap plus external
 * memory as the process sees it. RSS is what the goal counts; the live figure shows what the streams hold when the
 * allocator keeps pages it no longer uses, which makes RSS deltas swing from round to round.
 */
async function settledMemory(subject: Subject): Promise<MemoryReading> {
  const pid = subject.server.child.pid!;
  process.kill(pid, 'SIGUSR2');
  await sleep(500);
  const usage = JSON.parse(readFileSync(subject.memoryFile, 'utf8')) as { heapUsed: number; heapTotal: number; external: number };
  return { rssKb: rssKb(pid), liveKb: (usage.heapUsed + usage.external) / 1024, heapTotalKb: usage.heapTotal / 1024, heapFreeKb: (usage.heapTotal - usage.heapUsed) / 1024 };
}

async function measure(subject: Subject): Promise<RoundResult> {
  let pendingGroup = -1;
  let pending = 0;
  let release: () => void = () => {};
  const onFrame = (s: SseSocket) => {
    if (s.group === pendingGroup && s.waiting > 0 && s.frames >= s.waiting) { s.waiting = 0; if (--pending === 0) release(); }
  };
  // Memory per stream is the marginal cost of the second half of the streams, both readings taken with the first
  // half open: the heap is then sized for streams either way, whereas a reading with none open depends on how far
  // V8 happened to shrink the heap while idle (the same 10,000 streams read 3 to 7 KB each against that baseline).
  const half = Math.floor(streamCount / 2);
  const open = (i: number) => {
    const { target, token, group } = subject.stream(i);
    return openStream(subject.server.port, target, token, group, onFrame, subject.openMarker);
  };
  const firstHalf = await inBatches(half, 100, open);
  await sleep(500);
  const before = await settledMemory(subject);
  const secondHalf = await inBatches(streamCount - half, 100, (i) => open(half + i));
  const sockets = [...firstHalf, ...secondHalf];
  await sleep(500);
  const after = await settledMemory(subject);
  const lone = await (() => {
    const { target, token, group } = subject.loneStream();
    return openStream(subject.server.port, target, token, group, onFrame, subject.openMarker);
  })();

  // Latency: one event at a time, each to one group, until every stream of that group has it.
  const latencies: number[] = [];
  let lost = 0;
  const probesFrom = monotonicUs();
  for (let p = 0; p < probes; p++) {
    const group = p % orgCount;
    const members = sockets.filter((s) => s.group === group && !s.closed);
    for (const s of members) s.waiting = s.frames + 1;
    pendingGroup = group;
    pending = members.length;
    const done = new Promise<void>((r) => { release = r; });
    const t0 = now();
    await subject.publishOnce(group);
    await Promise.race([done, sleep(5000)]);
    for (const s of members) {
      if (s.waiting > 0) { lost++; s.waiting = 0; } else latencies.push(s.lastArrival - t0);
    }
    pendingGroup = -1;
  }
  // The same to one daemon's stream: a mutation for a daemon of a small org, with 10,000 others connected.
  const loneLatencies: number[] = [];
  for (let p = 0; p < loneProbes; p++) {
    lone.waiting = lone.frames + 1;
    pendingGroup = lone.group;
    pending = 1;
    const done = new Promise<void>((r) => { release = r; });
    const t0 = now();
    await subject.publishOnce(lone.group);
    await Promise.race([done, sleep(5000)]);
    if (lone.waiting > 0) { lost++; lone.waiting = 0; } else loneLatencies.push(lone.lastArrival - t0);
    pendingGroup = -1;
  }
  measured(`${subject.name} probes`, probesFrom);
  latencies.sort((a, b) => a - b);
  loneLatencies.sort((a, b) => a - b);
  const pctOf = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;
  const pct = (q: number) => pctOf(latencies, q);

  // Rate: frames delivered to all streams inside the publishing window.
  const total = () => sockets.reduce((n, s) => n + s.frames, 0);
  await sleep(200);
  const start = total();
  const t0 = now();
  const publishingFrom = monotonicUs();
  let end = start;
  let t1 = t0;
  const window = subject.blast(duration);
  await sleep(duration * 1000);
  end = total();
  t1 = now();
  measured(`${subject.name} publishing`, publishingFrom);
  await window;
  const closedEarly = sockets.filter((s) => s.closed).length;
  for (const s of [...sockets, lone]) s.socket.destroy();
  await sleep(1000);
  const rssPerStreamKb = (after.rssKb - before.rssKb) / (streamCount - half);
  const residentPerStreamKb = (after.rssKb - after.heapFreeKb - (before.rssKb - before.heapFreeKb)) / (streamCount - half);
  const livePerStreamKb = (after.liveKb - before.liveKb) / (streamCount - half);
  return {
    perStreamKb: perStream(residentPerStreamKb, livePerStreamKb), rssPerStreamKb, residentPerStreamKb, livePerStreamKb,
    heapTotalPerStreamKb: (after.heapTotalKb - before.heapTotalKb) / (streamCount - half), eventsPerSecond: (end - start) / ((t1 - t0) / 1000),
    p50Ms: pct(0.5), p99Ms: pct(0.99), lost: lost + closedEarly, opened: sockets.length,
    loneP50Ms: pctOf(loneLatencies, 0.5), loneP99Ms: pctOf(loneLatencies, 0.99),
  };
}

/** Starts a node of the checkout at `root` and provisions its orgs, daemons and credentials: the measured subject. */
async function startNodeSubject(name: string, root: string, nodeArgs: readonly string[]): Promise<Subject> {
  const label = name.replace(/\W+/g, '-');
  const nodeMemory = path.join(workDir, `${label}-memory.json`);
  const nodeServer = await startServer(path.join(root, 'ops/main.ts'), {
    TROUPE_MASTER_KEY: masterKey, TROUPE_DATA_DIR: path.join(workDir, label), PORT: '0', HOST: '127.0.0.1',
    TROUPE_ADMIN_TOKEN: adminToken, TROUPE_LOG_LEVEL: 'info', BENCH_MEMORY_FILE: nodeMemory,
    // Stopped at once: a node still in its shutdown delay when the harness's SIGKILL comes writes no --cpu-prof profile.
    TROUPE_SHUTDOWN_DELAY_MS: '0',
  }, '0', [...startFlags(root), ...gcOnSignal, ...nodeArgs]);
  servers.push(nodeServer);
  const base = `http://127.0.0.1:${nodeServer.port}`;
  process.stderr.write(`${name}: provisioning ${orgCount} orgs x ${daemonsPerOrg} daemons, and one org of one daemon...\n`);
  const orgs = await inBatches(orgCount + 1, 4, async (o) => {
    const org = await call('POST', `${base}/api/admin/orgs`, adminToken, { name: `Bench ${o}`, owner: { email: `bench${o}@bench.test` } });
    const orgId = org.org.id as string;
    await call('PUT', `${base}/api/org/${orgId}/credentials/github-token`, org.userToken, { provider: 'static', value: `ghp_bench_${o}_${'x'.repeat(40)}` });
    const daemons = await inBatches(o === orgCount ? 1 : daemonsPerOrg, 4, (i) => call('POST', `${base}/v1/daemon/register`, undefined, {
      registrationToken: org.registrationToken, hostname: `bench-${o}-${i}`, maxAgents: 4,
    }));
    return { orgId, apiKey: org.apiKey.fullKey as string, jwts: daemons.map((d) => d.runtimeJwt as string) };
  });
  const rotate = (group: number) => call('POST', `${base}/api/daemon/credentials/rotate`, orgs[group]!.apiKey, { orgId: orgs[group]!.orgId, kind: 'github-token' });
  return {
    name,
    memoryFile: nodeMemory,
    server: nodeServer,
    stream: (i) => {
      const group = i % orgCount;
      const jwts = orgs[group]!.jwts;
      return { target: '/api/daemon/credentials/stream', token: jwts[Math.floor(i / orgCount) % jwts.length], group };
    },
    loneStream: () => ({ target: '/api/daemon/credentials/stream', token: orgs[orgCount]!.jwts[0], group: orgCount }),
    openMarker: 'event: ready',
    async publishOnce(group) { await rotate(group); },
    async blast(seconds) {
      const until = now() + seconds * 1000;
      let next = 0;
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (now() < until) await rotate(next++ % orgCount);
      }));
    },
  };
}

const servers: RunningServer[] = [];
let failed = false;
try {
  const ceilingMemory = path.join(workDir, 'ceiling-memory.json');
  const ceilingServer = await startServer(path.join(here, 'ceilings/uws-sse.ts'), { BENCH_MEMORY_FILE: ceilingMemory }, '0', [...startFlags(path.join(here, '../..')), ...gcOnSignal]);
  servers.push(ceilingServer);
  const ceiling: Subject = {
    name: 'ceiling uWS SSE',
    memoryFile: ceilingMemory,
    server: ceilingServer,
    stream: (i) => ({ target: `/sse?g=${i % orgCount}`, group: i % orgCount }),
    loneStream: () => ({ target: `/sse?g=${orgCount}`, group: orgCount }),
    openMarker: ':ok\n\n',
    async publishOnce(group) { await call('POST', `http://127.0.0.1:${ceilingServer.port}/once?g=${group}`, undefined); },
    async blast(seconds) { await call('POST', `http://127.0.0.1:${ceilingServer.port}/blast?seconds=${seconds}`, undefined); },
  };

  const cpuProf = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values['cpu-prof'])}`] : [];
  const node = await startNodeSubject('troupe rotate stream', path.join(here, '../..'), cpuProf);
  const baseline = values.baseline === undefined ? undefined : await startNodeSubject('baseline rotate stream', path.resolve(values.baseline), []);
  const subjects = baseline === undefined ? [ceiling, node] : [ceiling, node, baseline];

  const results = new Map<string, RoundResult[]>(subjects.map((s) => [s.name, []]));
  const rateRatios: number[] = [];
  const baseRateRatios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const subject of subjects) {
      const r = await measure(subject);
      results.get(subject.name)!.push(r);
      process.stderr.write(`round ${round}/${rounds} ${subject.name}: ${r.opened} streams, ${r.perStreamKb.toFixed(2)} KB/stream (RSS ${r.rssPerStreamKb.toFixed(2)}, RSS less unused heap ${r.residentPerStreamKb.toFixed(2)}, live ${r.livePerStreamKb.toFixed(2)}, heap reserved ${r.heapTotalPerStreamKb.toFixed(2)}), `
        + `${Math.round(r.eventsPerSecond)} events/s, latency p50 ${r.p50Ms.toFixed(1)} ms p99 ${r.p99Ms.toFixed(1)} ms, `
        + `one daemon's stream p50 ${r.loneP50Ms.toFixed(1)} ms p99 ${r.loneP99Ms.toFixed(1)} ms, lost ${r.lost}\n`);
    }
    rateRatios.push(results.get(node.name)!.at(-1)!.eventsPerSecond / results.get(ceiling.name)!.at(-1)!.eventsPerSecond);
    if (baseline !== undefined) baseRateRatios.push(results.get(baseline.name)!.at(-1)!.eventsPerSecond / results.get(ceiling.name)!.at(-1)!.eventsPerSecond);
  }

  console.log(`\n${streamCount} streams in ${orgCount} groups, ${rounds} rounds of ${duration}s publishing, ${probes} latency probes; server core 0, clients core 1`);
  printTable([...results].map(([name, rs]) => ({
    config: name,
    'KB/stream': median(rs.map((r) => r.perStreamKb)),
    'RSS KB/stream': median(rs.map((r) => r.rssPerStreamKb)),
    'RSS less unused heap': median(rs.map((r) => r.residentPerStreamKb)),
    'live KB/stream': median(rs.map((r) => r.livePerStreamKb)),
    'events/s (median)': Math.round(median(rs.map((r) => r.eventsPerSecond))),
    'p50 ms': median(rs.map((r) => r.p50Ms)),
    'p99 ms': median(rs.map((r) => r.p99Ms)),
    'one stream p50 ms': median(rs.map((r) => r.loneP50Ms)),
    'one stream p99 ms': median(rs.map((r) => r.loneP99Ms)),
    lost: rs.reduce((n, r) => n + r.lost, 0),
  })));
  const mine = results.get(node.name)!;
  const goals = [
    { goal: `G6 streams opened (${streamCount})`, value: Math.min(...mine.map((r) => r.opened)), ok: (v: number) => v >= 10_000 && v >= streamCount, want: '>= 10000' },
    { goal: 'G6 memory per stream, KB', value: median(mine.map((r) => r.perStreamKb)), ok: (v: number) => v <= 4, want: '<= 4' },
    { goal: 'G6 event rate / ceiling', value: median(rateRatios), ok: (v: number) => v >= 0.5, want: '>= 0.50' },
    { goal: `G6 rotate -> stream p99, ms (${Math.round(streamCount / orgCount)} streams an org)`, value: median(mine.map((r) => r.p99Ms)), ok: (v: number) => v <= 50, want: '<= 50' },
    { goal: 'G6 rotate -> stream p99, ms (one daemon\'s stream)', value: median(mine.map((r) => r.loneP99Ms)), ok: (v: number) => v <= 50, want: '<= 50' },
    { goal: 'G6 frames lost or streams cut', value: mine.reduce((n, r) => n + r.lost, 0), ok: (v: number) => v === 0, want: '0' },
  ];
  console.log('');
  printTable(goals.map((g) => ({ goal: g.goal, value: g.value, wanted: g.want, met: g.ok(g.value) ? 'yes' : 'NO' })));
  if (baseline !== undefined) {
    const theirs = results.get(baseline.name)!;
    console.log(`\nbaseline ${path.resolve(values.baseline!)}, same rounds: event rate / ceiling ${median(baseRateRatios).toFixed(2)} (rounds ${baseRateRatios.map((v) => v.toFixed(2)).join(' ')}), `
      + `rotate -> stream p99 ${median(theirs.map((r) => r.p99Ms)).toFixed(1)} ms, ${median(theirs.map((r) => r.perStreamKb)).toFixed(2)} KB/stream`);
  }
  failed = goals.some((g) => !g.ok(g.value));
} catch (err) {
  failed = true;
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
