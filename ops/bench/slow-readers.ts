// Slow SSE readers (issue 20, item 5), the drive shared by the bench (ops/bench/sse-slow-readers.ts, full size) and
// the test (test/integration/http/sse-slow-readers.test.ts, smaller): a real node process (embedded engines), N
// subscribers of one interview's token stream (`GET /api/interview/:id/stream`, the heaviest stream a node serves:
// an agent's output watched by many) on raw sockets, of which some read the stream's opening and then never read
// again, while a worker posts token deltas at a steady rate (`POST /api/interview/:id/deltas`, 20 tokens a post, so
// each post is one frame at once, no batching delay). Measured: the delay from each post to its frame on every
// reading socket, frames the readers missed, when and why the node dropped each stalled reader (its log line), what
// the kernel held for each stalled connection (/proc/net/tcp: the node's send queue and the client's receive queue),
// and the node's memory.
// The parts: slow-readers-node.ts (the node process), slow-readers-subscriber.ts (the readers),
// slow-readers-publisher.ts (the worker posting), slow-readers-window.ts (the node's and this process's readings over
// the measured window) and slow-readers-result.ts (what is answered, the delays and the stalled connections).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateAdminToken } from '../secrets.js';
import { rssKb } from './process-readings.js';
import { startNode, postJson, type NodeLaunch, type NodeUnderTest } from './slow-readers-node.js';
import { Publisher } from './slow-readers-publisher.js';
import { DeliveryDelays, StalledQueues, type SlowReadersResult } from './slow-readers-result.js';
import { openSubscribers, type Subscriber } from './slow-readers-subscriber.js';
import { MeasuredWindow, settledLiveKb } from './slow-readers-window.js';

export type { SlowReadersResult, StalledReader } from './slow-readers-result.js';

export interface SlowReadersOptions extends NodeLaunch {
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
  readonly progress?: (line: string) => void;
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runSlowReaders(options: SlowReadersOptions): Promise<SlowReadersResult> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-slow-readers-'));
  const memoryFile = path.join(workDir, 'memory.json');
  const adminToken = generateAdminToken();
  const node = await startNode(options, adminToken, path.join(workDir, 'node'), memoryFile).catch((err: unknown) => {
    rmSync(workDir, { recursive: true, force: true });
    throw err;
  });
  const subscribers: Subscriber[] = [];
  try {
    return await drive(options, node, adminToken, memoryFile, subscribers);
  } finally {
    for (const s of subscribers) s.socket.destroy();
    await node.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** Opens the streams (adding each to `subscribers`), publishes, measures, and answers the figures. */
async function drive(options: SlowReadersOptions, node: NodeUnderTest, adminToken: string, memoryFile: string, subscribers: Subscriber[]): Promise<SlowReadersResult> {
  const say = options.progress ?? (() => {});
  const base = `http://127.0.0.1:${node.port}`;
  const org = await postJson(`${base}/api/admin/orgs`, adminToken, { name: 'Slow readers', owner: { email: `slow-readers-${Date.now()}@example.com` } });
  const worker = await postJson(`${base}/v1/daemon/register`, undefined, { registrationToken: org.registrationToken, hostname: 'slow-readers', maxAgents: 4 });
  const interview = 'slow-readers';

  const delays = new DeliveryDelays();
  await openSubscribers(node.port, `/api/interview/${interview}/stream`, org.apiKey.fullKey, options, delays.onDelay, subscribers);
  const readers = subscribers.filter((s) => !s.stalls);
  const stalled = subscribers.filter((s) => s.stalls);
  say(`${subscribers.length} streams open (${stalled.length} stalled)`);

  const publisher = new Publisher({
    deltasUrl: `${base}/api/interview/${interview}/deltas`, token: worker.runtimeJwt, framesPerSecond: options.framesPerSecond, frameBytes: options.frameBytes,
  });
  const kernel = new StalledQueues(node.port, stalled);
  const pid = node.child.pid!;
  const publishingFrom = now();
  publisher.start();
  await sleep(options.warmupSeconds * 1000);
  const liveStart = await settledLiveKb(pid, memoryFile);
  delays.measuring = true;
  const window = await MeasuredWindow.open(pid, node.port);
  while (window.elapsedMs() < options.seconds * 1000) {
    await sleep(1000);
    kernel.sample();
    const rss = window.sampleRss();
    say(`${Math.round(window.elapsedMs() / 1000)} s: ${publisher.published} frames, ${delays.count} deliveries, ${node.cutOffs.length} cut off, RSS ${Math.round(rss / 1024)} MB`);
  }
  publisher.stop();
  const readings = await window.close();
  await publisher.settled();
  // Frames still on their way: every reader should have each one soon; what has not come in 10 s is missed.
  // Every reader opened before the first post, so each should end with every frame published.
  const behind = () => readers.some((r) => !r.closed && r.frames < publisher.published);
  for (let waited = 0; behind() && waited < 10_000; waited += 100) await sleep(100);
  delays.measuring = false;
  const rssEnd = rssKb(pid);
  const liveEnd = await settledLiveKb(pid, memoryFile);

  const published = publisher.published;
  return {
    subscribers: subscribers.length, readers: readers.length, framesPublished: published, publishFailures: publisher.failures,
    frameBytes: publisher.posted[0]?.bytes ?? 0, latency: delays.latency(), clientLoopDelayP99Ms: readings.clientLoopDelayP99Ms,
    framesMissed: readers.reduce((n, r) => n + Math.max(0, published - r.frames), 0), readersClosed: readers.filter((r) => r.closed).length,
    stalled: kernel.readers(node.cutOffs, publisher.posted, publishingFrom),
    rssKb: { ...readings.rssKb, end: rssEnd }, liveKb: { start: liveStart, end: liveEnd },
    cpu: readings.cpu, nodeGc: readings.nodeGc, loadAverage: readings.loadAverage, nodeLoopDelay: readings.nodeLoopDelay, perFrame: delays.perFrame(),
  };
}
