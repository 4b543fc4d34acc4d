import { TroupeError } from '../ops/kernel/errors.js';

/**
 * A limit of `points` per window of `windowMs` per key, counted in this node's memory and answered synchronously.
 * For the worker protocol's hot routes (the heartbeat, the poll, status reports), where the Redis-backed limits of
 * storage/rate-limits.ts would add a promise to the quiet heartbeat (answered within uWS's own callback, with no
 * promise) and a Redis round trip to each of a cluster's thousands of heartbeats a second (decision 0082). What it
 * bounds is what one worker costs the node it talks to; a worker spread over n nodes may do n times as much in all.
 *
 * One window for every key, started by the first call after the last one ended: the keys of a window that ended are
 * forgotten together, so the memory held is one number per worker seen in the current window.
 */
export class NodeWindowLimit {
  private counts = new Map<string, number>();
  private windowEndsAt = 0;

  constructor(
    private readonly points: number,
    private readonly windowMs: number,
    /** The RATE_LIMITED message: which setting to raise. */
    private readonly message: string,
  ) {}

  /** Counts one against `key` at `now` (ms); throws RATE_LIMITED with `retryAfterSeconds` once the window is used up. */
  consume(key: string, now: number): void {
    if (now >= this.windowEndsAt) {
      this.counts.clear();
      this.windowEndsAt = now + this.windowMs;
    }
    const used = (this.counts.get(key) ?? 0) + 1;
    // A refused call is not counted: the window's count stays at the limit, not at what a flood sent.
    if (used > this.points) {
      const retryAfterSeconds = Math.max(1, Math.ceil((this.windowEndsAt - now) / 1000));
      throw new TroupeError('RATE_LIMITED', this.message, { retryAfterSeconds, limit: this.points, windowSeconds: this.windowMs / 1000 });
    }
    this.counts.set(key, used);
  }

  /** Keys counted in the current window (for tests and metrics). */
  get keys(): number {
    return this.counts.size;
  }
}
