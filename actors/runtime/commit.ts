import type { Logger } from '../../ops/kernel/logger.js';
import type { Projection } from '../../storage/snapshot-store.js';
import type { AnyBehavior, Entry, RuntimeState } from './entry.js';
import { retire } from './lifetime.js';
import { uncertainWrite, unloaded, type Cell, type LoadedCell, type SaveOutcome } from './persistence.js';

/** Writing a turn's new state: the read-model writes that commit with it, and what a failed write leaves behind. */

/** The kind's read-model writes for this change, in whichever of its two forms the kind declares, or none. */
export function projectionOf(
  behavior: AnyBehavior, id: string, next: unknown, previous: unknown, effects: readonly unknown[],
): Projection | undefined {
  if (behavior.projectStatement !== undefined) {
    return { statement: (statement) => behavior.projectStatement!(statement, id, next, previous, effects) };
  }
  if (behavior.project !== undefined) return (trx) => behavior.project!(trx, id, next, previous, effects);
  return undefined;
}

/**
 * The cell an actor keeps after the store refused or failed its write (the asker has been answered already).
 * `next` and `effects` are what the write carried.
 */
export function cellAfterFailedSave(
  rt: RuntimeState, entry: Entry, loaded: LoadedCell<unknown>, next: unknown, effects: readonly unknown[],
  saved: Extract<SaveOutcome, { ok: false }>, turnLog: Logger,
): Cell<unknown> {
  if (saved.stale) {
    // Another owner wrote this address: our copy is out of date and must not answer anything more.
    turnLog.warn({ version: loaded.version }, 'snapshot written by another owner; stopping');
    retire(rt, entry, 'stale', true);
    return loaded;
  }
  // A failure of the store itself (a lost connection, a timeout) leaves the write's outcome unknown: it may have
  // committed. Keeping the old state would make the retry that follows meet its own write as another owner's
  // (issue 30: 503 STORAGE_STALE_VERSION, then 409 for a completion that was recorded). The next message reads
  // what is stored instead, and the machine answers a repeat of what is there as done.
  if (saved.error.status >= 500) {
    turnLog.info({ version: loaded.version, code: saved.error.code }, 'write outcome unknown; the next message reloads the snapshot');
    entry.uncertainWrite = uncertainWrite(loaded.version + 1, next, effects);
    return unloaded;
  }
  return loaded;
}
