import { TroupeError } from '../ops/kernel/errors.js';

/**
 * Admission control for the routes that write (issue 20, decision 0053): a node works on at most `concurrency`
 * such requests at once; the next `queue` wait their turn in arrival order for at most `maxWaitMs`; past either
 * bound a request is refused at once with OVERLOADED (503, Retry-After) instead of joining a queue it cannot leave
 * in time.
 *
 * Why: a node offered more writes than it can serve took them all in, every request shared the processor with all
 * the others, and every answer came seconds late (p99 5.4 s at ~215 writes/s served of 1,000 offered), refusals
 * during a Postgres outage included. With the work bounded, what is admitted is served at the node's own pace and
 * what is not is told so in microseconds, so an overloaded node stays responsive and catches up as soon as the load
 * drops.
 *
 * The queue is FIFO and its deadlines grow with it, so expired waiters are always at its head: they are dropped
 * when a slot frees and by one sweep timer, never with a timer per request.
 */
export interface AdmissionOptions {
  /** Write requests served at once. */
  readonly concurrency: number;
  /** Write requests that may wait for a slot; one more is refused at once. */
  readonly queue: number;
  /** The longest a request waits for a slot before it is refused. */
  readonly maxWaitMs: number;
}

export type ShedReason = 'queue_full' | 'waited_too_long';

export interface AdmissionEvents {
  /** A request refused, and why. */
  onShed?(reason: ShedReason): void;
}

interface Waiter {
  readonly deadline: number;
  readonly admit: () => void;
  readonly refuse: (err: TroupeError) => void;
}

/** Seconds a refused caller is told to wait: the queue turns over well within it on a node that is catching up. */
export const OVERLOAD_RETRY_AFTER_SECONDS = 1;

export class AdmissionGate {
  private active = 0;
  private readonly waiters: Array<Waiter | undefined> = [];
  private head = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly options: AdmissionOptions, private readonly events: AdmissionEvents = {}) {}

  /** Requests being served. */
  get serving(): number {
    return this.active;
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.waiters.length - this.head;
  }

  /**
   * Takes a slot: `undefined` when one was free (the common case costs no promise), else a promise of one that
   * rejects with OVERLOADED when the wait runs out. Throws OVERLOADED at once when the queue is full. Every slot
   * taken must be given back with `leave`.
   */
  enter(now = performance.now()): Promise<void> | undefined {
    if (this.active < this.options.concurrency && this.waiting === 0) {
      this.active += 1;
      return undefined;
    }
    if (this.waiting >= this.options.queue) throw this.refusal('queue_full');
    return new Promise<void>((admit, refuse) => {
      this.waiters.push({ deadline: now + this.options.maxWaitMs, admit, refuse });
      this.sweeper ??= setInterval(() => this.dropExpired(performance.now()), Math.max(5, this.options.maxWaitMs / 4)).unref();
    });
  }

  /** Gives a slot back; the longest-waiting request still in time takes it. */
  leave(now = performance.now()): void {
    this.active -= 1;
    this.admitWaiting(now);
  }

  private admitWaiting(now: number): void {
    this.dropExpired(now);
    while (this.active < this.options.concurrency) {
      const next = this.shift();
      if (next === undefined) return;
      this.active += 1;
      next.admit();
    }
  }

  private dropExpired(now: number): void {
    for (let w = this.peek(); w !== undefined && w.deadline <= now; w = this.peek()) {
      this.shift();
      w.refuse(this.refusal('waited_too_long'));
    }
  }

  private peek(): Waiter | undefined {
    return this.waiters[this.head];
  }

  private shift(): Waiter | undefined {
    if (this.head >= this.waiters.length) return undefined;
    const w = this.waiters[this.head];
    this.waiters[this.head] = undefined;
    this.head += 1;
    if (this.head === this.waiters.length) {
      this.waiters.length = 0;
      this.head = 0;
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    } else if (this.head > 1024 && this.head * 2 > this.waiters.length) {
      this.waiters.splice(0, this.head);
      this.head = 0;
    }
    return w;
  }

  private refusal(reason: ShedReason): TroupeError {
    this.events.onShed?.(reason);
    return new TroupeError('OVERLOADED', undefined, { reason, retryAfterSeconds: OVERLOAD_RETRY_AFTER_SECONDS });
  }
}
