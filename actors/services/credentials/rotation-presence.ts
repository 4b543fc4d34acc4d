import type { Deps } from '../deps.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import { countPresence, refreshPresence, writePresence } from '../../../storage/credentials/credentials.js';

/** Presence rows are refreshed this often, and counted while younger than PRESENCE_TTL_MS. */
const PRESENCE_REFRESH_MS = 15_000;
/** Three refresh periods: one missed refresh (a slow database) does not hide a node's subscribers. */
const PRESENCE_TTL_MS = 45_000;

/**
 * This node's rotate-stream subscribers per org, kept in the presence rows every node counts from (spec 4.2: a
 * rotation answers with the org's live subscribers across the cluster). Each join and leave writes the org's
 * absolute count; a refresher, from `start` to `stop`, rewrites them and renews this node's rows.
 */
export interface RotatePresence {
  /** One more local subscriber of the org; resolves once its presence is recorded. */
  join(orgId: string): Promise<void>;
  /** One fewer; the last leaves a row of 0 rather than none, so the count stays an absolute, ordered write. */
  leave(orgId: string): void;
  /** The org's subscribers across the cluster at `now`, from the rows younger than PRESENCE_TTL_MS. */
  countAt(orgId: string, now: number): Promise<number>;
  start(): void;
  /** Stops the refresher and waits for the writes under way. */
  stop(): Promise<void>;
}

export function createRotatePresence(deps: Pick<Deps, 'db' | 'clock'>, nodeId: string, log: Logger): RotatePresence {
  const localCounts = new Map<string, number>();
  // Presence writes per org run one after another, so the row always ends at the latest count.
  const writes = new Map<string, Promise<void>>();
  let refresher: NodeJS.Timeout | undefined;

  const record = (orgId: string): Promise<void> => {
    const previous = writes.get(orgId) ?? Promise.resolve();
    const next = previous
      .then(() => writePresence(deps.db, orgId, nodeId, localCounts.get(orgId) ?? 0, deps.clock.now()))
      .catch((err: unknown) => log.warn({ err, orgId }, 'could not record rotate-stream presence; the refresher retries'));
    writes.set(orgId, next);
    void next.finally(() => { if (writes.get(orgId) === next) writes.delete(orgId); });
    return next;
  };

  return {
    join(orgId) {
      localCounts.set(orgId, (localCounts.get(orgId) ?? 0) + 1);
      return record(orgId);
    },
    leave(orgId) {
      const left = (localCounts.get(orgId) ?? 1) - 1;
      if (left > 0) localCounts.set(orgId, left);
      else localCounts.delete(orgId);
      void record(orgId);
    },
    countAt: (orgId, now) => countPresence(deps.db, orgId, now - PRESENCE_TTL_MS),
    start() {
      refresher = setInterval(() => {
        const now = deps.clock.now();
        // Rewrites absolute counts too, so a write lost earlier is repaired within one period.
        Promise.all([...localCounts.keys()].map((orgId) => record(orgId)))
          .then(() => refreshPresence(deps.db, nodeId, now))
          .catch((err: unknown) => log.warn({ err }, 'could not refresh rotate-stream presence'));
      }, PRESENCE_REFRESH_MS);
      refresher.unref();
    },
    async stop() {
      clearInterval(refresher);
      refresher = undefined;
      await Promise.all([...writes.values()]);
    },
  };
}
