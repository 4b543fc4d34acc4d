import type { NodeUnderTest } from './slow-readers-node.js';
import type { Subscriber } from './slow-readers-subscriber.js';
import { tcpQueues } from './process-readings.js';

/**
 * What the slow-readers drive (slow-readers.ts) answers, and the recorders it is built from: the readers' delays
 * per frame, and what the kernel held for each stalled connection.
 */

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

const round1 = (ms: number) => Math.round(ms * 10) / 10;
const percentile = (sorted: number[], q: number) => round1(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN);

/** Every delay a reader saw while measuring, and per frame (keyed by its send time) the smallest and largest. */
export class DeliveryDelays {
  measuring = false;
  private readonly delays: number[] = [];
  private readonly frames = new Map<number, { first: number; last: number }>();

  /** Each subscriber's frame handler. */
  readonly onDelay = (ms: number, sentAt: number) => {
    if (!this.measuring) return;
    this.delays.push(ms);
    const f = this.frames.get(sentAt);
    if (!f) this.frames.set(sentAt, { first: ms, last: ms });
    else { f.first = Math.min(f.first, ms); f.last = Math.max(f.last, ms); }
  };

  get count(): number {
    return this.delays.length;
  }

  latency(): SlowReadersResult['latency'] {
    const delays = [...this.delays].sort((a, b) => a - b);
    return { count: delays.length, p50Ms: percentile(delays, 0.5), p99Ms: percentile(delays, 0.99), maxMs: round1(delays.at(-1) ?? NaN) };
  }

  perFrame(): SlowReadersResult['perFrame'] {
    const firsts = [...this.frames.values()].map((f) => f.first).sort((a, b) => a - b);
    const lasts = [...this.frames.values()].map((f) => f.last).sort((a, b) => a - b);
    return { firstP50Ms: percentile(firsts, 0.5), firstP99Ms: percentile(firsts, 0.99), lastP50Ms: percentile(lasts, 0.5), lastP99Ms: percentile(lasts, 0.99) };
  }
}

/** The most the kernel held for each stalled connection: the node's send queue and the client's receive queue. */
export class StalledQueues {
  private readonly seen: Map<Subscriber, { tx: number; rx: number }>;

  constructor(private readonly nodePort: number, private readonly stalled: readonly Subscriber[]) {
    this.seen = new Map(stalled.map((s) => [s, { tx: 0, rx: 0 }]));
  }

  sample(): void {
    const queues = tcpQueues();
    for (const s of this.stalled) {
      const mine = s.socket.localPort!;
      const seen = this.seen.get(s)!;
      seen.tx = Math.max(seen.tx, queues.get(`${this.nodePort}>${mine}`)?.tx ?? 0);
      seen.rx = Math.max(seen.rx, queues.get(`${mine}>${this.nodePort}`)?.rx ?? 0);
    }
  }

  /**
   * Each stalled reader: when (from `publishingFrom`) and why the node dropped it, by its cut-off log line, what the
   * kernel held for it, and the frame bytes posted before the drop.
   */
  readers(cutOffs: NodeUnderTest['cutOffs'], posted: ReadonlyArray<{ at: number; bytes: number }>, publishingFrom: number): StalledReader[] {
    return this.stalled.map((s) => {
      const cut = cutOffs.find((c) => c.line.reqId === s.requestId);
      const until = cut?.at ?? Infinity;
      return {
        droppedAfterMs: cut ? Math.round(cut.at - publishingFrom) : null,
        reason: cut?.line.reason ?? null, stalledMs: cut?.line.stalledMs ?? null, unsentBytes: cut?.line.unsentBytes ?? null,
        kernelSendQueueBytes: this.seen.get(s)!.tx, kernelReceiveQueueBytes: this.seen.get(s)!.rx,
        bytesOffered: posted.filter((p) => p.at < until).reduce((n, p) => n + p.bytes, 0),
      };
    });
  }
}
