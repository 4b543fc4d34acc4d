import type { Deps } from '../deps.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import { sessionsWithExpiredLease } from '../../../storage/sessions/queries.js';

/**
 * Returns sessions of silent workers to the queue (or fails them) through their actors: every third of the lease,
 * the sessions whose worker has not been heard of for longer than the lease are each told `session.leaseExpired`.
 */
export interface LeaseSweeper {
  /** One sweep; answers how many sessions were told. A sweep under way answers 0 at once. */
  sweep(): Promise<number>;
  start(): void;
  stop(): void;
}

export function createLeaseSweeper(
  deps: Pick<Deps, 'db' | 'clock' | 'ask'>, log: Logger, leaseMs: number, flushLiveness: () => Promise<void>,
): LeaseSweeper {
  let sweeping = false;
  let timer: NodeJS.Timeout | undefined;
  const sweep = async (): Promise<number> => {
    if (sweeping) return 0;
    sweeping = true;
    try {
      // Liveness still buffered on this node must count, or a worker heard moments ago would look silent.
      await flushLiveness();
      const expired = await sessionsWithExpiredLease(deps.db, deps.clock.now() - leaseMs, 500);
      for (const s of expired) {
        try {
          await deps.ask(`session/${s.id}`, { type: 'session.leaseExpired', workerId: s.workerId });
        } catch (err) {
          log.warn({ err, sessionId: s.id }, 'lease reclaim failed; the next sweep retries');
        }
      }
      return expired.length;
    } finally {
      sweeping = false;
    }
  };
  return {
    sweep,
    start() {
      timer = setInterval(() => {
        sweep().catch((err: unknown) => log.warn({ err }, 'lease sweep failed'));
      }, Math.max(1000, Math.floor(leaseMs / 3)));
      timer.unref();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
