/**
 * The node's pending-mutation index (decision 0007): which workers have undelivered mutations, so a heartbeat asks
 * its daemon-host actor only then. A quiet heartbeat (the steady state of a fleet) sends no actor message and runs
 * no query.
 *
 * It is authoritative, not a guess with a time-to-live: only workers with something pending are held, and a
 * worker that is absent has nothing pending. That holds because every change reaches it:
 * - the daemon-host actor announces its pending count on `daemon.pending` after every durable change (enqueue,
 *   deliver, cancel), and every node (its own included) applies it;
 * - the route that got the actor's reply sets it at once on its own node, so that node needs no round trip;
 * - `reconcile` replaces the whole index from the read model (one grouped query per node, jittered by the caller),
 *   which seeds a starting node and repairs a node that missed an event (broker outage). An event applied while that
 *   query is in flight is newer than its answer and wins.
 * Until the first reconciliation has succeeded the index knows nothing, so every worker "may have pending".
 */
export const PENDING_TOPIC = 'daemon.pending';

export interface PendingEvent {
  readonly workerId: string;
  readonly pending: number;
}

export function parsePendingEvent(event: unknown): PendingEvent | undefined {
  const e = event as { workerId?: unknown; pending?: unknown } | null;
  if (typeof e?.workerId !== 'string' || e.workerId.length === 0 || e.workerId.length > 64) return undefined;
  if (typeof e.pending !== 'number' || !Number.isInteger(e.pending) || e.pending < 0) return undefined;
  return { workerId: e.workerId, pending: e.pending };
}

export class PendingIndex {
  /** Workers with undelivered mutations → how many. */
  private readonly counts = new Map<string, number>();
  private seeded = false;
  /** Workers changed while a reconciliation is in flight: its older answer must not overwrite them. */
  private changedDuringReconcile: Set<string> | undefined;

  /** True when the worker may have undelivered mutations, so the heartbeat must ask its actor. */
  mayHavePending(workerId: string): boolean {
    return !this.seeded || this.counts.has(workerId);
  }

  /** Whether the first reconciliation has succeeded (before, every heartbeat asks its actor). */
  get isSeeded(): boolean {
    return this.seeded;
  }

  /** Workers currently known to have something pending. */
  get size(): number {
    return this.counts.size;
  }

  set(workerId: string, pending: number): void {
    if (pending > 0) this.counts.set(workerId, pending);
    else this.counts.delete(workerId);
    this.changedDuringReconcile?.add(workerId);
  }

  /**
   * Replaces the index with `load()`'s answer (pending counts per worker from the read model), except for workers
   * changed while it ran. One reconciliation at a time: a call during another returns that one.
   */
  reconcile(load: () => Promise<ReadonlyMap<string, number>>): Promise<void> {
    if (this.running) return this.running;
    const changed = new Set<string>();
    this.changedDuringReconcile = changed;
    this.running = (async () => {
      try {
        const fresh = await load();
        for (const workerId of [...this.counts.keys()]) {
          if (!fresh.has(workerId) && !changed.has(workerId)) this.counts.delete(workerId);
        }
        for (const [workerId, n] of fresh) {
          if (changed.has(workerId)) continue;
          if (n > 0) this.counts.set(workerId, n);
          else this.counts.delete(workerId);
        }
        this.seeded = true;
      } finally {
        this.changedDuringReconcile = undefined;
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private running: Promise<void> | undefined;
}
