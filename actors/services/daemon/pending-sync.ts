import type { Deps } from '../deps.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import { pendingMutationCounts } from '../../../storage/sessions/daemon.js';
import { parsePendingEvent, PENDING_TOPIC, type PendingIndex } from './pending-index.js';

/**
 * Keeps the node's pending-mutation index exact (./pending-index.ts): it applies every `daemon.pending`
 * announcement, and reconciles the index with the read model every `recheckMs` on average (jittered between 0.5×
 * and 1.5×, so the nodes of a cluster do not query together), which bounds how late a mutation can be if this node
 * missed an event.
 */
export interface PendingSync {
  start(): void;
  /** No reconciliation after this. */
  stop(): void;
  /** Stops applying announcements; resolves once unsubscribed from `daemon.pending`. */
  unsubscribe(): Promise<void>;
}

export function createPendingSync(deps: Pick<Deps, 'db' | 'transport'>, log: Logger, pending: PendingIndex, recheckMs: number): PendingSync {
  let stopped = false;
  let reconcileTimer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => Promise<void>) | undefined;
  const reconcile = (): void => {
    if (stopped) return;
    pending.reconcile(() => pendingMutationCounts(deps.db))
      .catch((err: unknown) => log.warn({ err }, 'could not reconcile the pending-mutation index; retrying'))
      .finally(() => {
        if (stopped) return;
        // Until the first success every heartbeat asks its actor, so the seed is retried soon.
        const delay = pending.isSeeded ? recheckMs * (0.5 + Math.random()) : Math.min(recheckMs, 1000);
        reconcileTimer = setTimeout(reconcile, delay);
        reconcileTimer.unref();
      });
  };
  return {
    start() {
      // Subscribed before the seed query starts, so no announcement falls between the two.
      deps.transport.subscribe(PENDING_TOPIC, (_topic, event) => {
        const e = parsePendingEvent(event);
        if (e) pending.set(e.workerId, e.pending);
        else log.warn({ event }, 'ignored a malformed daemon.pending event');
      }).then((u) => { unsubscribe = u; }, (err: unknown) => log.warn({ err }, 'could not subscribe to daemon.pending'))
        .finally(reconcile);
    },
    stop() {
      stopped = true;
      clearTimeout(reconcileTimer);
    },
    async unsubscribe() {
      await unsubscribe?.().catch((err: unknown) => log.warn({ err }, 'could not unsubscribe from daemon.pending'));
    },
  };
}
