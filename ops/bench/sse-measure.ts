import { readFileSync } from 'node:fs';
import { inBatches } from './in-batches.js';
import { rssKb } from './process-readings.js';
import { openStream, type SseSocket } from './sse-stream-socket.js';
import type { Subject } from './sse-subjects.js';

/**
 * One round of the SSE bench (sse.ts) against one server: memory per stream, publish → frame latency to a group and
 * to a lone stream, and the delivered event rate while the server publishes as fast as it can.
 */

export interface RoundPlan {
  readonly streamCount: number;
  readonly orgCount: number;
  /** Latency probes to a group, and to the lone stream. */
  readonly probes: number;
  readonly loneProbes: number;
  /** Seconds of publishing measured for the event rate. */
  readonly duration: number;
  /** Records a measured window (`fromUs` on CLOCK_MONOTONIC, µs) for the --cpu-prof reader. */
  readonly measured: (name: string, fromUs: number) => void;
}

const now = () => performance.timeOrigin + performance.now();
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

export interface RoundResult {
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

/** Publishes one event at a time to a group and waits, up to 5 s, until each stream of it has the event. */
class GroupProbe {
  private group = -1;
  private pending = 0;
  private release: () => void = () => {};

  /** Every stream's frame handler: counts down the streams still waiting for the probe event. */
  readonly onFrame = (s: SseSocket) => {
    if (s.group === this.group && s.waiting > 0 && s.frames >= s.waiting) { s.waiting = 0; if (--this.pending === 0) this.release(); }
  };

  /** The delay from the publish call to the event on each of `members`; a stream without it in 5 s is lost. */
  async send(subject: Subject, group: number, members: readonly SseSocket[]): Promise<{ delays: number[]; lost: number }> {
    for (const s of members) s.waiting = s.frames + 1;
    this.group = group;
    this.pending = members.length;
    const done = new Promise<void>((r) => { this.release = r; });
    const t0 = now();
    await subject.publishOnce(group);
    await Promise.race([done, sleep(5000)]);
    const delays: number[] = [];
    let lost = 0;
    for (const s of members) {
      if (s.waiting > 0) { lost++; s.waiting = 0; } else delays.push(s.lastArrival - t0);
    }
    this.group = -1;
    return { delays, lost };
  }
}

/**
 * Opens every stream, reading the server's memory between the halves. Memory per stream is the marginal cost of the
 * second half of the streams, both readings taken with the first half open: the heap is then sized for streams
 * either way, whereas a reading with none open depends on how far V8 happened to shrink the heap while idle (the
 * same 10,000 streams read 3 to 7 KB each against that baseline).
 */
async function openStreamsAndWeigh(subject: Subject, streamCount: number, onFrame: (s: SseSocket) => void) {
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
  const added = streamCount - half;
  const residentPerStreamKb = (after.rssKb - after.heapFreeKb - (before.rssKb - before.heapFreeKb)) / added;
  const livePerStreamKb = (after.liveKb - before.liveKb) / added;
  return {
    sockets,
    memory: {
      perStreamKb: perStream(residentPerStreamKb, livePerStreamKb), rssPerStreamKb: (after.rssKb - before.rssKb) / added,
      residentPerStreamKb, livePerStreamKb, heapTotalPerStreamKb: (after.heapTotalKb - before.heapTotalKb) / added,
    },
  };
}

/** Frames delivered to all streams a second while the server publishes as fast as it can for `plan.duration`. */
async function deliveryRate(subject: Subject, sockets: readonly SseSocket[], plan: RoundPlan): Promise<number> {
  const total = () => sockets.reduce((n, s) => n + s.frames, 0);
  await sleep(200);
  const start = total();
  const t0 = now();
  const publishingFrom = monotonicUs();
  const window = subject.blast(plan.duration);
  await sleep(plan.duration * 1000);
  const end = total();
  const t1 = now();
  plan.measured(`${subject.name} publishing`, publishingFrom);
  await window;
  return (end - start) / ((t1 - t0) / 1000);
}

export async function measure(subject: Subject, plan: RoundPlan): Promise<RoundResult> {
  const probe = new GroupProbe();
  const { sockets, memory } = await openStreamsAndWeigh(subject, plan.streamCount, probe.onFrame);
  const { target, token, group } = subject.loneStream();
  const lone = await openStream(subject.server.port, target, token, group, probe.onFrame, subject.openMarker);

  // Latency: one event at a time, each to one group, until every stream of that group has it.
  const latencies: number[] = [];
  let lost = 0;
  const probesFrom = monotonicUs();
  for (let p = 0; p < plan.probes; p++) {
    const group = p % plan.orgCount;
    const sent = await probe.send(subject, group, sockets.filter((s) => s.group === group && !s.closed));
    latencies.push(...sent.delays);
    lost += sent.lost;
  }
  // The same to one daemon's stream: a mutation for a daemon of a small org, with 10,000 others connected.
  const loneLatencies: number[] = [];
  for (let p = 0; p < plan.loneProbes; p++) {
    const sent = await probe.send(subject, lone.group, [lone]);
    loneLatencies.push(...sent.delays);
    lost += sent.lost;
  }
  plan.measured(`${subject.name} probes`, probesFrom);
  latencies.sort((a, b) => a - b);
  loneLatencies.sort((a, b) => a - b);

  const eventsPerSecond = await deliveryRate(subject, sockets, plan);
  const closedEarly = sockets.filter((s) => s.closed).length;
  for (const s of [...sockets, lone]) s.socket.destroy();
  await sleep(1000);
  return {
    ...memory, eventsPerSecond,
    p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), lost: lost + closedEarly, opened: sockets.length,
    loneP50Ms: percentile(loneLatencies, 0.5), loneP99Ms: percentile(loneLatencies, 0.99),
  };
}
