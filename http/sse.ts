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
}

export const defaultSseOptions: SseOptions = { heartbeatMs: 15_000, maxBufferedBytes: 256 * 1024 };

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
 * costs a bounded amount of memory.
 */
export class UwsSseStream implements SseStream {
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private heldByUws = 0;
  private blocked = false;
  private ended = false;
  private cut = false;
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
    this.enqueue(HEARTBEAT);
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
    return this.cut;
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
        this.cutOff();
        return false;
      }
      return true;
    }
    this.outgoing = frame;
    this.res.cork(this.writeOutgoing);
    this.outgoing = undefined;
    if (!this.accepted) {
      this.blocked = true;
      this.heldByUws += frame.length;
    }
    return true;
  }

  /** uWS calls this when the socket can take more; always returns true (we never leave a partial write pending). */
  private drain(): boolean {
    if (this.ended) return true;
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

  private cutOff(): void {
    this.cut = true;
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
