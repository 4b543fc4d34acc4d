/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"): the n-th retry
 * waits a uniformly random time in [0, min(cap, base × 2^n)], so a fleet of workers that lost the server at the same
 * moment does not come back at the same moment.
 */
export class Backoff {
  private attempt = 0;

  constructor(private readonly baseMs = 1000, private readonly capMs = 30_000, private readonly random: () => number = Math.random) {}

  /** The wait before the next try, and counts it. */
  next(): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.floor(this.random() * ceiling);
  }

  /** The ceiling the next wait is drawn under (for logs). */
  ceiling(): number {
    return Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
  }

  reset(): void {
    this.attempt = 0;
  }

  get failures(): number {
    return this.attempt;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. An `unref`'d sleep does not keep the process alive. */
export const sleep = (ms: number, signal?: AbortSignal, unref = false): Promise<void> => new Promise((resolve) => {
  if (signal?.aborted) return resolve();
  const timer = setTimeout(done, ms);
  if (unref) timer.unref();
  function done() {
    clearTimeout(timer);
    signal?.removeEventListener('abort', done);
    resolve();
  }
  signal?.addEventListener('abort', done, { once: true });
});
