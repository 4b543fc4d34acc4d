import type { Knex } from 'knex';
import type { SqlTx } from './sql-tx.js';
import type { FollowUp, TransitionStatement } from './transition-statement.js';

/**
 * Durable actor state, one row per actor address, fenced by an optimistic version.
 *
 * `save(address, expectedVersion, state)` writes only when the stored version still equals `expectedVersion`
 * (0 for an actor that has never been saved) and returns the new version. When another owner wrote in between
 * it throws `TroupeError('STORAGE_STALE_VERSION')`: the caller must stop the actor, never retry blindly.
 *
 * `project` runs inside the same transaction as the snapshot write, so read models (lists, lookups) never
 * disagree with the state the actor answered from.
 */
export interface Snapshot<S> {
  readonly address: string;
  readonly version: number;
  readonly state: S;
  readonly updatedAt: Date;
}

/** Read-model writes through knex, in the snapshot's transaction. */
export type KnexProjection = (trx: Knex.Transaction) => Promise<void>;

/**
 * The same in plain SQL (./sql-tx.ts), for the hot kinds (decision 0045): the store then writes the snapshot and
 * runs the projection without knex.
 */
export type SqlProjection =
  | { readonly sql: (tx: SqlTx) => Promise<void> }
  /**
   * The hottest kind's (decision 0055): the projection adds its writes to the snapshot's own statement
   * (./transition-statement.ts) and returns what has to follow it, if anything. A transition with no follow-up is one
   * statement, which commits on its own when no other write shares its transaction.
   */
  | { readonly statement: (statement: TransitionStatement) => FollowUp | undefined };

export type Projection = KnexProjection | SqlProjection;

export interface SnapshotStore {
  load<S>(address: string): Promise<Snapshot<S> | undefined>;
  save<S>(address: string, expectedVersion: number, state: S, project?: Projection): Promise<number>;
  /** Removes the snapshot when its version still matches; used when an actor's lifetime is over. */
  remove(address: string, expectedVersion: number): Promise<void>;
}
