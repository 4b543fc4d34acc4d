import { isDeepStrictEqual } from 'node:util';
import { warnOncePerWindow } from '../../ops/kernel/flood-log.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Logger } from '../../ops/kernel/logger.js';
import type { Projection, SnapshotStore } from '../../storage/snapshot-store.js';

/**
 * Persist, then reply (DESIGN rule 2, decision 0004). These two steps are the only places an actor touches
 * storage: loading its state when it (re)starts, and writing a new state fenced by the version it loaded.
 * Both classify failures so the actor knows whether it may keep running.
 */

/** An actor's in-memory state: nothing until its first message has loaded it, then a state and its version. */
export type Cell<S> =
  | { readonly loaded: false }
  | { readonly loaded: true; readonly version: number; readonly state: S };

export const unloaded: Cell<never> = { loaded: false };

export type LoadedCell<S> = Extract<Cell<S>, { loaded: true }>;

export type LoadOutcome<S> = { readonly ok: true; readonly cell: LoadedCell<S> } | { readonly ok: false; readonly error: TroupeError };

/**
 * Loads the last durable state, or starts from `initial` (version 0: never saved). A storage failure is an
 * outcome (the actor stays unloaded and tries again on its next message); a throw from `initial` is a bug in
 * the behavior and propagates, so the runtime treats it as a startup crash.
 */
export async function rehydrate<S>(
  store: SnapshotStore, address: string, initial: () => S, log: Logger,
): Promise<LoadOutcome<S>> {
  let snapshot;
  try {
    snapshot = await store.load<S>(address);
  } catch (err) {
    return { ok: false, error: storageFailure(err, log, 'load') };
  }
  return snapshot === undefined
    ? { ok: true, cell: { loaded: true, version: 0, state: initial() } }
    : { ok: true, cell: { loaded: true, version: snapshot.version, state: snapshot.state } };
}

export type SaveOutcome =
  | { readonly ok: true; readonly version: number }
  /** `stale`: another owner wrote since we loaded; this incarnation must stop and the next message rehydrates. */
  | { readonly ok: false; readonly stale: boolean; readonly error: TroupeError };

export async function persist<S>(
  store: SnapshotStore, address: string, expectedVersion: number, next: S, project: Projection | undefined, log: Logger,
): Promise<SaveOutcome> {
  try {
    const version = await store.save(address, expectedVersion, next, project);
    return { ok: true, version };
  } catch (err) {
    const error = storageFailure(err, log, 'save');
    return { ok: false, stale: error.code === 'STORAGE_STALE_VERSION', error };
  }
}

/**
 * The store classifies its own failures (storage/storage-errors.ts): a lost connection arrives as a retryable
 * STORAGE_UNAVAILABLE, a stale version as STORAGE_STALE_VERSION, a read model's conflict raised inside
 * `project` as its own TroupeError; all are passed on as they are. Anything else (a constraint the projection
 * did not expect, a driver bug) is not known to be transient, so the caller hears INTERNAL and the log keeps
 * the cause. Either way the actor keeps its previous state. If a write reported as failed did commit after all,
 * the in-memory version is behind the stored one, the next save reports a stale version and the actor
 * rehydrates: the failure heals itself.
 */
function storageFailure(err: unknown, log: Logger, operation: 'load' | 'save'): TroupeError {
  if (err instanceof TroupeError) {
    if (err.code === 'STORAGE_UNAVAILABLE') warnOncePerWindow(log, `snapshot:${operation}`, { operation, details: err.details }, 'snapshot store unavailable');
    return err;
  }
  log.error({ err, operation }, 'snapshot store failed');
  return new TroupeError('INTERNAL');
}

/** A write whose outcome the store could not report: it may have committed (a lost connection, a timeout). */
export interface UncertainWrite {
  readonly version: number;
  /** The state as written, as JSON reads it back. */
  readonly state: unknown;
  readonly effects: readonly unknown[];
}

export const uncertainWrite = (version: number, state: unknown, effects: readonly unknown[]): UncertainWrite =>
  ({ version, state: JSON.parse(JSON.stringify(state)) as unknown, effects });

/** Whether the stored snapshot is that write: its version and its state, compared as values (jsonb keeps no key order). */
export const isOwnWrite = (uncertain: UncertainWrite, stored: LoadedCell<unknown>): boolean =>
  stored.version === uncertain.version && isDeepStrictEqual(stored.state, uncertain.state);
