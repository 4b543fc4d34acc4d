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

export function currentTrace(): TraceContext | undefined {
  return storage.getStore();
}

export function withTrace<T>(context: TraceContext | undefined, fn: () => T): T {
  return context === undefined ? fn() : storage.run(context, fn);
}
