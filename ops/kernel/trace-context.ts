import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';

/**
 * The W3C trace context of the request being served (issue 20): the edge takes a valid `traceparent` header (or
 * starts a trace), runs the request inside it, the transport carries it in the envelope of every ask and tell made
 * meanwhile, and the node that runs the actor handles the message inside it again, so log lines on both nodes carry
 * the same `trace` (the logger's mixin reads it). AsyncLocalStorage follows the awaits of one request without
 * threading an argument through every layer.
 */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`. */
  readonly traceparent: string;
  /** The edge's request id (`x-request-id`) when the trace started at this node's edge. */
  readonly reqId?: string;
}

const storage = new AsyncLocalStorage<TraceContext>();
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZEROS_32 = '0'.repeat(32);
const ZEROS_16 = '0'.repeat(16);

export function isTraceparent(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = TRACEPARENT.exec(value);
  return m !== null && m[1] !== ZEROS_32 && m[2] !== ZEROS_16;
}

// Ids come from a pool of random bytes filled 4 KiB at a time: one randomBytes call per request cost the heartbeat
// path about a tenth of its CPU (a call into OpenSSL each time), and W3C ids need uniqueness, not a fresh call.
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let poolOffset = 0;

function randomHex(bytes: number): string {
  if (poolOffset + bytes > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}

/** The trace of an incoming request: the caller's trace id with a new span of ours, or a new trace. */
export function traceparentFor(header: string | undefined): string {
  const span = randomHex(8);
  if (header !== undefined) {
    const m = TRACEPARENT.exec(header.trim().toLowerCase());
    if (m !== null && m[1] !== ZEROS_32 && m[2] !== ZEROS_16) return `00-${m[1]}-${span}-${m[3]}`;
  }
  return `00-${randomHex(16)}-${span}-01`;
}

/**
 * The trace of a request served at this node's edge, its traceparent drawn when first read: most requests (every
 * quiet heartbeat) make no ask and write no log line, and drawing ids and building the string for each of them was
 * CPU on the hot path for nothing. Once read it never changes, so every line and envelope of the request names the
 * same trace.
 */
export class EdgeTrace implements TraceContext {
  private drawn: string | undefined;
  /** `header` is the request's traceparent header as sent, if any. */
  constructor(private readonly header: string | undefined, readonly reqId: string) {}

  get traceparent(): string {
    return (this.drawn ??= traceparentFor(this.header));
  }
}

export function currentTrace(): TraceContext | undefined {
  return storage.getStore();
}

export function withTrace<T>(context: TraceContext | undefined, fn: () => T): T {
  return context === undefined ? fn() : storage.run(context, fn);
}
