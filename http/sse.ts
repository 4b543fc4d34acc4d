import type { SseStream } from './types.js';
import type { UwsResponse } from './uws.js';
import type { HeartbeatWheel } from './sse-heartbeats.js';
import type { Logger } from '../ops/kernel/logger.js';

export interface SseOptions {
  /** A comment line is sent this often so proxies and clients see the stream is alive. @default 15000 */
  readonly heartbeatMs: number;
  /**
   * The most bytes a client may leave unsent before it is cut off. Kept small: a client that falls this far behind
   * reconnects with Last-Event-ID and resumes, which costs less than holding its backlog. @default 262144
   */
  readonly maxBufferedBytes: number;
  /**
   * How long a client may leave the socket full without taking a byte before it is cut off, however little is
   * waiting. The byte bound alone never ends a stalled reader of a quiet stream: its backlog grows by a few hundred
   * bytes an event and may take hours to pass the bound, all that time holding a socket and its kernel buffers.
   * Checked when a frame or a keep-alive comment is due, so a stalled reader is dropped at most one heartbeat
   * period later. @default 15000
   */
  readonly stallTimeoutMs: number;
}

export const defaultSseOptions: SseOptions = { heartbeatMs: 15_000, maxBufferedBytes: 256 * 1024, stallTimeoutMs: 15_000 };

/**
 * Why a stream was cut off: its backlog passed `maxBufferedBytes`, or it took nothing for `stallTimeoutMs`; with how
 * long it had taken nothing and how many bytes were unsent (ours and uWS's) at that moment.
 */
export interface CutOff {
  readonly reason: 'backlog' | 'stalled';
  readonly stalledMs: number;
  readonly unsentBytes: number;
}

/** `Last-Event-ID` values longer than this are ignored rather than handed to handlers. */
const MAX_LAST_EVENT_ID = 1024;

/** Serialises one event. Multi-line data becomes one `data:` line per line; id and event lose CR, LF and NUL. */
export function formatSseEvent(event: { id?: string; event?: string; data: unknown }): string {
  let frame = '';
  if (event.id !== undefined) frame += `id: ${singleLine(event.id)}\n`;
  if (event.event !== undefined) frame += `event: ${singleLine(event.event)}\n`;
  const text = typeof event.data === 'string' ? event.data : JSON.stringify(event.data) ?? 'null';
  for (const line of text.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`;
  return `${frame}\n`;
}

// An id or event name carrying a newline would let its author inject whole events into the stream.
const singleLine = (s: string): string => s.replace(/[\r\n\0]/g, '');

export function parseLastEventId(header: string | undefined): string | undefined {
  if (header === undefined || header === '' || header.length > MAX_LAST_EVENT_ID) return undefined;
  return header;
}

/**
 * A fan-out hands one event object to thousands of streams in one synchronous loop, so its frame is built once: the
 * last frame made from an object payload is reused while the same object, id and event name are sent again in the
 * same turn. The memo is dropped at the end of the turn, so a payload mutated later is formatted afresh.
 */
let memo: { data: object; id: string | undefined; event: string | undefined; frame: Buffer } | undefined;

export function sseFrame(event: { id?: string; event?: string; data: unknown }): Buffer {
  const { data } = event;
  if (typeof data !== 'object' || data === null) return Buffer.from(formatSseEvent(event));
  if (memo && memo.data === data && memo.id === event.id && memo.event === event.event) return memo.frame;
  if (!memo) queueMicrotask(() => { memo = undefined; });
  memo = { data, id: event.id, event: event.event, frame: Buffer.from(formatSseEvent(event)) };
  return memo.frame;
}

const HEARTBEAT = Buffer.from(':\n\n');
// Written only to make uWS flush what it holds: with an onWritable handler registered, uWS drains its own buffer
// only when the handler writes something (verified against 20.30), and a comment line is invisible to clients.
const DRAIN_PROBE = Buffer.from(':\n');

/**
 * An SSE stream over a uWS response whose headers are already written.
 *
 * Backpressure: while uWS accepts writes (`write` returns true) frames go straight out. Once a write reports
 * backpressure, later frames wait in our own queue and go out from `onWritable`, one at a time, until a write is
 * accepted whole. Unsent bytes are the queue (known exactly) plus what uWS holds (at most the frames that were
 * refused, counted as an upper bound); when they pass `maxBufferedBytes` the client is cut off, so a stalled reader
 * costs a bounded amount of memory. A client that leaves the socket full for `stallTimeoutMs` without uWS reporting
 * it writable once (it read nothing) is cut off too, so a stalled reader is also dropped in bounded time.
 *
 * What the node holds for a stalled reader is this queue and uWS's copy of the refused frames; the kernel's send
 * buffer (up to `net.ipv4.tcp_wmem`'s maximum, 4 MiB by default on Linux) is not the node's to size: uWS gives no
 * access to the socket's options. See ops/decisions/0054-slow-sse-readers.md for the figures.
 */
export class UwsSseStream implements SseStream {
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private heldByUws = 0;
  private blocked = false;
  private ended = false;
  private cut: CutOff | undefined;
  /** When the client last showed it reads: the moment writes were refused, then each writable event. */
  private lastProgress = 0;
  private readonly closeCallbacks: Array<() => void> = [];
  heartbeatSlot = 0;
  // One corked write per frame without a closure per frame: the frame goes through these two fields.
  private outgoing: Buffer | undefined;
  private accepted = false;
  private readonly writeOutgoing = (): void => { this.accepted = this.res.write(this.outgoing!); };

  constructor(
    private readonly res: UwsResponse,
    readonly lastEventId: string | undefined,
    private readonly options: SseOptions,
    onAbort: (fn: () => void) => void,
    private readonly log: Logger,
    /** The server's wheel, which sends every stream's keep-alive comment. */
    private readonly heartbeats: HeartbeatWheel,
  ) {
    onAbort(() => this.finish());
    res.onWritable(() => this.drain());
    this.heartbeats.add(this);
  }

  get closed(): boolean {
    return this.ended;
  }

  /** The keep-alive comment, sent by the node's heartbeat wheel. */
  beat(): void {
    if (this.blocked && this.stalled()) this.cutOffClient('stalled');
    else this.enqueue(HEARTBEAT);
  }

  send(event: { id?: string; event?: string; data: unknown }): boolean {
    if (this.ended) return false;
    return this.enqueue(sseFrame(event));
  }

  onClose(fn: () => void): void {
    if (this.ended) {
      queueMicrotask(fn);
      return;
    }
    this.closeCallbacks.push(fn);
  }

  /** Ends the stream cleanly (terminating chunk); the client may reconnect. */
  close(): void {
    if (this.ended) return;
    this.res.cork(() => this.res.end());
    this.finish();
  }

  /** True when the stream ended because the client fell too far behind. */
  get wasCutOff(): boolean {
    return this.cut !== undefined;
  }

  /** Why the stream was cut off, if it was. */
  get cutOff(): CutOff | undefined {
    return this.cut;
  }

  /** Milliseconds since the client last took anything, while writes are refused; 0 while it keeps up. */
  get stalledForMs(): number {
    return this.blocked ? performance.now() - this.lastProgress : 0;
  }

  /** Unsent bytes as counted for the cut-off (exposed for tests and metrics). */
  get unsentBytes(): number {
    return this.queuedBytes + this.heldByUws;
  }

  private enqueue(frame: Buffer): boolean {
    if (this.ended) return false;
    if (this.blocked) {
      this.queue.push(frame);
      this.queuedBytes += frame.length;
      if (this.unsentBytes > this.options.maxBufferedBytes) {
        this.cutOffClient('backlog');
        return false;
      }
      if (this.stalled()) {
        this.cutOffClient('stalled');
        return false;
      }
      return true;
    }
    this.outgoing = frame;
    this.res.cork(this.writeOutgoing);
    this.outgoing = undefined;
    if (!this.accepted) {
      this.blocked = true;
      this.lastProgress = performance.now();
      this.heldByUws += frame.length;
    }
    return true;
  }

  private stalled(): boolean {
    return performance.now() - this.lastProgress > this.options.stallTimeoutMs;
  }

  /** uWS calls this when the socket can take more; always returns true (we never leave a partial write pending). */
  private drain(): boolean {
    if (this.ended) return true;
    // Writable again: the client took some of what the kernel held.
    this.lastProgress = performance.now();
    if (this.queue.length === 0) {
      if (this.res.write(DRAIN_PROBE)) this.unblock();
      return true;
    }
    while (this.queue.length > 0) {
      const frame = this.queue.shift()!;
      this.queuedBytes -= frame.length;
      if (this.res.write(frame)) {
        this.heldByUws = 0;
      } else {
        this.heldByUws += frame.length;
        return true;
      }
    }
    this.unblock();
    return true;
  }

  private unblock(): void {
    this.blocked = false;
    this.heldByUws = 0;
  }

  private cutOffClient(reason: CutOff['reason']): void {
    // Read by the close callbacks (the node's log line).
    this.cut = { reason, stalledMs: Math.round(this.stalledForMs), unsentBytes: this.unsentBytes };
    this.queue = [];
    this.queuedBytes = 0;
    // close() aborts the connection at once; uWS then runs onAborted, which finishes the stream.
    this.res.close();
    this.finish();
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.heartbeats.remove(this);
    this.queue = [];
    this.queuedBytes = 0;
    this.heldByUws = 0;
    for (const fn of this.closeCallbacks.splice(0)) {
      try {
        fn();
      } catch (err) {
        // A cleanup callback failing must not stop the others; the stream is gone either way.
        this.log.error({ err }, 'SSE close callback failed');
      }
    }
  }
}
