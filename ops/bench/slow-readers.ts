// Slow SSE readers (issue 20, item 5), the drive shared by the bench (ops/bench/sse-slow-readers.ts, full size) and
// the test (test/integration/http/sse-slow-readers.test.ts, smaller): a real node process (embedded engines), N
// subscribers of one interview's token stream (`GET /api/interview/:id/stream`, the heaviest stream a node serves:
// an agent's output watched by many) on raw sockets, of which some read the stream's opening and then never read
// again, while a worker posts token deltas at a steady rate (`POST /api/interview/:id/deltas`, 20 tokens a post, so
// each post is one frame at once, no batching delay). Measured: the delay from each post to its frame on every
// reading socket, frames the readers missed, when and why the node dropped each stalled reader (its log line), what
// the kernel held for each stalled connection (/proc/net/tcp: the node's send queue and the client's receive queue),
// and the node's memory.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { generateAdminToken, generateMasterKey } from '../secrets.js';

export interface SlowReadersOptions {
  readonly subscribers: number;
  /** How many of the subscribers stop reading once the stream is open. */
  readonly stalled: number;
  /** Posts (one frame each) a second. */
  readonly framesPerSecond: number;
  /** Bytes of tokens per frame (the frame itself is ~150 bytes more). */
  readonly frameBytes: number;
  /** Seconds of publishing measured, after `warmupSeconds` unmeasured. */
  readonly seconds: number;
  readonly warmupSeconds: number;
  /** Node process arguments before the script (the bench pins with taskset through `command`). */
  readonly command?: readonly string[];
  /** Extra environment for the node. */
  readonly env?: NodeJS.ProcessEnv;
  /** Node flags before the script (`--cpu-prof`, `--trace-gc`). */
  readonly nodeArgs?: readonly string[];
  /** The checkout whose node runs (a baseline worktree with its own node_modules link); default this one. */
  readonly root?: string;
  /** Lines of the node's stdout that are not its JSON log (`--trace-gc` output). */
  readonly onNodeLine?: (line: string) => void;
  readonly progress?: (line: string) => void;
}

export interface StalledReader {
  /** Milliseconds from the start of publishing to the node's cut-off log line; null when it was never dropped. */
  readonly droppedAfterMs: number | null;
  readonly reason: string | null;
  /** As the node logged it: how long the client had taken nothing, and the bytes it held unsent for it. */
  readonly stalledMs: number | null;
  readonly unsentBytes: number | null;
  /** The most the kernel held for this connection, seen once a second: the node's send queue, the client's receive queue. */
  readonly kernelSendQueueBytes: number;
  readonly kernelReceiveQueueBytes: number;
  /** Frame bytes posted to the stream from the start of publishing to the drop (or the end). */
  readonly bytesOffered: number;
}

export interface SlowReadersResult {
  readonly subscribers: number;
  readonly readers: number;
  readonly framesPublished: number;
  readonly publishFailures: number;
  readonly frameBytes: number;
  readonly latency: { readonly count: number; readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number };
  /** This process's event-loop delay p99 while measuring: a client too busy to read shows here, not as the node's delay. */
  readonly clientLoopDelayP99Ms: number;
  /** Frames published that some reading socket never got (summed over readers). */
  readonly framesMissed: number;
  /** Reading sockets the node closed (should be none). */
  readonly readersClosed: number;
  readonly stalled: StalledReader[];
  /**
   * Where the time goes, over the measured window: the node's CPU (user + system, from /proc) and this process's, the
   * node's own event-loop delay and GC time (its /metrics, reset at the window's start), and the load average.
   */
  readonly cpu: { readonly wallMs: number; readonly nodeMs: number; readonly clientMs: number; readonly nodeWaitMs: number };
  readonly nodeLoopDelay: { readonly p99Ms: number; readonly maxMs: number };
  readonly nodeGc: Record<string, { readonly count: number; readonly ms: number }>;
  readonly loadAverage: { readonly start: number[]; readonly end: number[] };
  /**
   * Per frame, the delay to its first and to its last reader (p50 / p99 over frames): a first-reader delay as high as
   * the last's means the frame was late before the fan-out began (the post, the node's loop, or this process).
   */
  readonly perFrame: { readonly firstP50Ms: number; readonly firstP99Ms: number; readonly lastP50Ms: number; readonly lastP99Ms: number };
  /** VmRSS of the node, kB: once the streams are open and warm, the largest seen while publishing, and at the end. */
  readonly rssKb: { readonly start: number; readonly max: number; readonly end: number };
  /** Live heap plus external memory after a full collection, kB, at the start and end of publishing. */
  readonly liveKb: { readonly start: number; readonly end: number };
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface NodeUnderTest { readonly child: ChildProcess; readonly port: number; readonly cutOffs: Array<{ at: number; line: any }>; stop(): Promise<void> }

async function startNode(options: SlowReadersOptions, adminToken: string, dataDir: string, memoryFile: string): Promise<NodeUnderTest> {
  const args = [
    ...(options.command ?? []), process.execPath, '--expose-gc', ...(options.nodeArgs ?? []), '--import', path.join(repoRoot, 'ops/bench/gc-on-signal.mjs'),
    '--import', 'tsx', 'ops/main.ts',
  ];
  const child = spawn(args[0]!, args.slice(1), {
    cwd: options.root ?? repoRoot,
    env: {
      ...process.env, TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, TROUPE_DATA_DIR: dataDir,
      PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info', BENCH_MEMORY_FILE: memoryFile,
      // One worker posting tens of times a second: the per-credential limits are not what is measured.
      TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '10000000', TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '10000000',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const cutOffs: NodeUnderTest['cutOffs'] = [];
  const tail: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    // A node that never says ready is stopped here: the caller has no handle on it yet. 180 s: on a machine at load
    // ~13, tsx compiling the tree took longer than 90 s once.
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`node not ready within 180 s:\n${tail.join('\n')}`)); }, 180_000);
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`node exited with ${code}:\n${tail.join('\n')}`)); });
    createInterface({ input: child.stderr! }).on('line', (line) => { tail.push(line); if (tail.length > 40) tail.shift(); });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('event stream cut off')) cutOffs.push({ at: now(), line: JSON.parse(line) });
      else if (line.includes('troupe node ready')) { clearTimeout(timer); resolve(JSON.parse(line).port as number); }
      else {
        if (!line.startsWith('{')) options.onNodeLine?.(line);
        tail.push(line); if (tail.length > 40) tail.shift();
      }
    });
  });
  return {
    child, port, cutOffs,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => { clearTimeout(kill); resolve(); });
      child.kill('SIGINT');
    }),
  };
}

async function call(url: string, token: string | undefined, body: unknown): Promise<any> {
  const res = await fetch(url, {
    method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(15_000),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${url} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

const MARKER = Buffer.from('"tokens":["');
const QUOTE = 0x22;

/**
 * One raw-socket subscriber. Each frame's first token is the time it was posted (this process's clock), so a reader
 * takes its delay from the frame itself. A marker cut between two chunks is found by searching the end of the
 * previous chunk again; a frame is counted when its closing quote arrives, so never twice.
 */
class Subscriber {
  frames = 0;
  closed = false;
  opened = false;
  /** The stream's `x-request-id`, which the node's cut-off log line names. */
  requestId = '';
  private carry: Buffer = Buffer.alloc(0);
  constructor(readonly socket: net.Socket, readonly stalls: boolean, private readonly onDelay: (ms: number, sentAt: number) => void) {}

  read(chunk: Buffer): void {
    const at = now();
    // A frame cut between the previous chunk and this one: only the seam is searched again, never the whole chunk
    // copied (the clients read tens of MB/s on one core).
    if (this.carry.length > 0) {
      const seam = Buffer.concat([this.carry, chunk.subarray(0, 64)]);
      for (let i = seam.indexOf(MARKER); i >= 0 && i < this.carry.length; i = seam.indexOf(MARKER, i + 1)) this.count(seam, i, this.carry.length, at);
    }
    for (let i = chunk.indexOf(MARKER); i >= 0; i = chunk.indexOf(MARKER, i + MARKER.length)) this.count(chunk, i, 0, at);
    this.carry = chunk.subarray(Math.max(0, chunk.length - 64));
  }

  /** Counts the frame whose marker starts at `i` if its closing quote is at or after `from` (not counted before). */
  private count(text: Buffer, i: number, from: number, at: number): void {
    const start = i + MARKER.length;
    const end = text.indexOf(QUOTE, start);
    if (end < 0 || end < from) return;
    this.frames += 1;
    const sentAt = Number(text.toString('latin1', start, end));
    this.onDelay(at - sentAt, sentAt);
  }
}

function subscribe(port: number, target: string, token: string, stalls: boolean, onDelay: (ms: number, sentAt: number) => void): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const s = new Subscriber(socket, stalls, onDelay);
    let head = '';
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`${target} did not open within 30 s`)); }, 30_000);
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => {
      if (s.opened) return s.read(chunk);
      head += chunk.toString('latin1');
      if (!head.includes(':ok\n\n')) {
        if (head.includes('\r\n\r\n') && !head.startsWith('HTTP/1.1 200')) { clearTimeout(timer); socket.destroy(); reject(new Error(`${target}: ${head.slice(0, 300)}`)); }
        return;
      }
      s.opened = true;
      s.requestId = /x-request-id: ([^\r]+)/i.exec(head)?.[1] ?? '';
      clearTimeout(timer);
      // A stalled reader takes nothing more from here on: the kernel buffers fill, then the node's.
      if (stalls) socket.pause();
      resolve(s);
    });
    socket.on('error', () => {});
    socket.on('close', () => { s.closed = true; if (!s.opened) { clearTimeout(timer); reject(new Error(`${target} closed before opening`)); } });
  });
}

/** Send and receive queues of every loopback TCP connection, keyed by `localPort>remotePort`. */
function tcpQueues(): Map<string, { tx: number; rx: number }> {
  const out = new Map<string, { tx: number; rx: number }>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5) continue;
      const local = parseInt(f[1]!.split(':').at(-1)!, 16);
      const remote = parseInt(f[2]!.split(':').at(-1)!, 16);
      const [tx, rx] = f[4]!.split(':').map((h) => parseInt(h, 16));
      out.set(`${local}>${remote}`, { tx: tx!, rx: rx! });
    }
  }
  return out;
}

/** User + system CPU of a process so far, ms (/proc/<pid>/stat fields 14 and 15, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** Time a process's main thread spent runnable but waiting for a CPU so far, ms (/proc/<pid>/schedstat, field 2). */
const runQueueWaitMs = (pid: number): number => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;

/** The node's Prometheus text (unauthenticated /metrics); reading it also resets its event-loop delay histogram. */
async function scrape(port: number): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(15_000) });
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('nodejs_eventloop_lag_') && !line.startsWith('nodejs_gc_duration_seconds_')) continue;
    // Keyed by name and GC kind only: the node adds a `node` label to every series.
    const space = line.lastIndexOf(' ');
    const name = line.slice(0, Math.min(space, line.indexOf('{') >= 0 ? line.indexOf('{') : space));
    const kind = /kind="(\w+)"/.exec(line)?.[1];
    out.set(kind ? `${name}{kind="${kind}"}` : name, Number(line.slice(space + 1)));
  }
  return out;
}

const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

async function settledLiveKb(pid: number, memoryFile: string): Promise<number> {
  rmSync(memoryFile, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; !existsSync(memoryFile) && waited < 10_000; waited += 50) await sleep(50);
  await sleep(50);
  const usage = JSON.parse(readFileSync(memoryFile, 'utf8')) as { heapUsed: number; external: number };
  return Math.round((usage.heapUsed + usage.external) / 1024);
}

async function inBatches(count: number, width: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => { while (next < count) await work(next++); }));
}

export async function runSlowReaders(options: SlowReadersOptions): Promise<SlowReadersResult> {
  const say = options.progress ?? (() => {});
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-slow-readers-'));
  const memoryFile = path.join(workDir, 'memory.json');
  const adminToken = generateAdminToken();
  const node = await startNode(options, adminToken, path.join(workDir, 'node'), memoryFile).catch((err: unknown) => {
    rmSync(workDir, { recursive: true, force: true });
    throw err;
  });
  const subscribers: Subscriber[] = [];
  try {
    const base = `http://127.0.0.1:${node.port}`;
    const org = await call(`${base}/api/admin/orgs`, adminToken, { name: 'Slow readers', owner: { email: `slow-readers-${Date.now()}@example.com` } });
    const worker = await call(`${base}/v1/daemon/register`, undefined, { registrationToken: org.registrationToken, hostname: 'slow-readers', maxAgents: 4 });
    const interview = 'slow-readers';
    const target = `/api/interview/${interview}/stream`;

    let measuring = false;
    const delays: number[] = [];
    /** Per frame (keyed by its send time), the smallest and largest delay seen. */
    const frames = new Map<number, { first: number; last: number }>();
    const onDelay = (ms: number, sentAt: number) => {
      if (!measuring) return;
      delays.push(ms);
      const f = frames.get(sentAt);
      if (!f) frames.set(sentAt, { first: ms, last: ms });
      else { f.first = Math.min(f.first, ms); f.last = Math.max(f.last, ms); }
    };
    // The stalled ones are spread through the opening order, not all first or last.
    const every = options.stalled > 0 ? Math.floor(options.subscribers / options.stalled) : Infinity;
    await inBatches(options.subscribers, 50, async (i) => {
      const stalls = i % every === every - 1 && subscribers.filter((s) => s.stalls).length < options.stalled;
      subscribers.push(await subscribe(node.port, target, org.apiKey.fullKey, stalls, onDelay));
    });
    const readers = subscribers.filter((s) => !s.stalls);
    const stalled = subscribers.filter((s) => s.stalls);
    say(`${subscribers.length} streams open (${stalled.length} stalled)`);

    // The publisher: one post of 20 tokens per tick, the first token its send time.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const padding = Array.from({ length: 19 }, (_, i) => String.fromCharCode(97 + (i % 26)).repeat(Math.max(1, Math.floor(options.frameBytes / 19))));
    let published = 0;
    let failures = 0;
    /** Frames the node accepted: when the post was answered, and the tokens' bytes. */
    const posted: Array<{ at: number; bytes: number }> = [];
    const post = () => new Promise<void>((resolve) => {
      const sentAt = now();
      const body = JSON.stringify({ tokens: [sentAt.toFixed(3), ...padding] });
      const req = http.request(`${base}/api/interview/${interview}/deltas`, {
        method: 'POST', agent, timeout: 10_000,
        headers: { authorization: `Bearer ${worker.runtimeJwt}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 202) { published += 1; posted.push({ at: now(), bytes: body.length }); } else failures += 1;
          resolve();
        });
      });
      req.on('timeout', () => req.destroy(new Error('deadline')));
      req.on('error', () => { failures += 1; resolve(); });
      req.end(body);
    });
    const inFlight = new Set<Promise<void>>();
    let ticker: NodeJS.Timeout | undefined;
    const startPublishing = () => {
      let owed = 0;
      let last = performance.now();
      ticker = setInterval(() => {
        const t = performance.now();
        owed += ((t - last) / 1000) * options.framesPerSecond;
        last = t;
        for (; owed >= 1; owed -= 1) { const p = post(); inFlight.add(p); void p.finally(() => inFlight.delete(p)); }
      }, 5);
    };

    const kernel = new Map(stalled.map((s) => [s, { tx: 0, rx: 0 }]));
    const sampleKernel = () => {
      const queues = tcpQueues();
      for (const s of stalled) {
        const mine = s.socket.localPort!;
        const seen = kernel.get(s)!;
        seen.tx = Math.max(seen.tx, queues.get(`${node.port}>${mine}`)?.tx ?? 0);
        seen.rx = Math.max(seen.rx, queues.get(`${mine}>${node.port}`)?.rx ?? 0);
      }
    };

    const pid = node.child.pid!;
    const publishingFrom = now();
    startPublishing();
    await sleep(options.warmupSeconds * 1000);
    const liveStart = await settledLiveKb(pid, memoryFile);
    const rssStart = rssKb(pid);
    let rssMax = rssStart;
    measuring = true;
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const loadStart = os.loadavg();
    const metricsStart = await scrape(node.port);
    const measuredFrom = now();
    const cpuStart = { node: cpuMs(pid), client: process.cpuUsage(), wait: runQueueWaitMs(pid) };
    while (now() - measuredFrom < options.seconds * 1000) {
      await sleep(1000);
      sampleKernel();
      rssMax = Math.max(rssMax, rssKb(pid));
      say(`${Math.round((now() - measuredFrom) / 1000)} s: ${published} frames, ${delays.length} deliveries, ${node.cutOffs.length} cut off, RSS ${Math.round(rssKb(pid) / 1024)} MB`);
    }
    clearInterval(ticker);
    loopDelay.disable();
    const cpu = { wallMs: Math.round(now() - measuredFrom), nodeMs: cpuMs(pid) - cpuStart.node, clientMs: 0, nodeWaitMs: Math.round(runQueueWaitMs(pid) - cpuStart.wait) };
    const clientCpu = process.cpuUsage(cpuStart.client);
    cpu.clientMs = Math.round((clientCpu.user + clientCpu.system) / 1000);
    const metricsEnd = await scrape(node.port);
    const loadEnd = os.loadavg();
    const nodeGc: SlowReadersResult['nodeGc'] = {};
    for (const [key, value] of metricsEnd) {
      const kind = /^nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"/.exec(key);
      if (!kind) continue;
      const g = (nodeGc[kind[2]!] ??= { count: 0, ms: 0 }) as { count: number; ms: number };
      const delta = value - (metricsStart.get(key) ?? 0);
      if (kind[1] === 'count') g.count = delta; else g.ms = Math.round(delta * 10_000) / 10;
    }
    await Promise.allSettled([...inFlight]);
    // Frames still on their way: every reader should have each one soon; what has not come in 10 s is missed.
    // Every reader opened before the first post, so each should end with every frame published.
    const behind = () => readers.some((r) => !r.closed && r.frames < published);
    for (let waited = 0; behind() && waited < 10_000; waited += 100) await sleep(100);
    measuring = false;
    const rssEnd = rssKb(pid);
    const liveEnd = await settledLiveKb(pid, memoryFile);

    const framesMissed = readers.reduce((n, r) => n + Math.max(0, published - r.frames), 0);
    delays.sort((a, b) => a - b);
    const pctOf = (sorted: number[], q: number) => Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN) * 10) / 10;
    const pct = (q: number) => pctOf(delays, q);
    const firsts = [...frames.values()].map((f) => f.first).sort((a, b) => a - b);
    const lasts = [...frames.values()].map((f) => f.last).sort((a, b) => a - b);
    const stalledResults: StalledReader[] = stalled.map((s) => {
      const cut = node.cutOffs.find((c) => c.line.reqId === s.requestId);
      const until = cut?.at ?? Infinity;
      return {
        droppedAfterMs: cut ? Math.round(cut.at - publishingFrom) : null,
        reason: cut?.line.reason ?? null, stalledMs: cut?.line.stalledMs ?? null, unsentBytes: cut?.line.unsentBytes ?? null,
        kernelSendQueueBytes: kernel.get(s)!.tx, kernelReceiveQueueBytes: kernel.get(s)!.rx,
        bytesOffered: posted.filter((p) => p.at < until).reduce((n, p) => n + p.bytes, 0),
      };
    });
    return {
      subscribers: subscribers.length, readers: readers.length, framesPublished: published, publishFailures: failures, frameBytes: posted[0]?.bytes ?? 0,
      latency: { count: delays.length, p50Ms: pct(0.5), p99Ms: pct(0.99), maxMs: Math.round((delays.at(-1) ?? NaN) * 10) / 10 },
      clientLoopDelayP99Ms: Math.round(loopDelay.percentile(99) / 1e5) / 10,
      framesMissed, readersClosed: readers.filter((r) => r.closed).length, stalled: stalledResults,
      rssKb: { start: rssStart, max: rssMax, end: rssEnd }, liveKb: { start: liveStart, end: liveEnd },
      cpu, nodeGc, loadAverage: { start: loadStart, end: loadEnd },
      nodeLoopDelay: {
        p99Ms: Math.round((metricsEnd.get('nodejs_eventloop_lag_p99_seconds') ?? NaN) * 10_000) / 10,
        maxMs: Math.round((metricsEnd.get('nodejs_eventloop_lag_max_seconds') ?? NaN) * 10_000) / 10,
      },
      perFrame: { firstP50Ms: pctOf(firsts, 0.5), firstP99Ms: pctOf(firsts, 0.99), lastP50Ms: pctOf(lasts, 0.5), lastP99Ms: pctOf(lasts, 0.99) },
    };
  } finally {
    for (const s of subscribers) s.socket.destroy();
    await node.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}
