import type { Knex } from 'knex';
import { TroupeError } from '../ops/kernel/errors.js';
import type { Projection, Snapshot, SnapshotStore, SqlProjection } from './snapshot-store.js';
import { CommitGroups, type CommitGroupOptions, type WriteOutcome } from './commit-group.js';
import { sqlQuery, type SqlTx } from './sql-tx.js';
import { TransitionStatement } from './transition-statement.js';
import { dbKind } from './db.js';
import { withStorageErrors } from './storage-errors.js';

/**
 * SnapshotStore on knex (Postgres or PGlite), table `actor_snapshots`.
 *
 * Fencing: a first save INSERTs with `on conflict do nothing`; every later save is
 * `UPDATE … WHERE address = ? AND version = ?`. Zero rows either way means another owner wrote first, which is
 * reported as STORAGE_STALE_VERSION. Under concurrency Postgres makes the loser wait for the winner's row lock
 * and then re-check the predicate, so exactly one of two same-version writers succeeds.
 */

/**
 * Addresses are a btree primary key; Postgres refuses index entries beyond ~2.7 kB, so the cap sits well below
 * that in UTF-8 bytes and a hostile id fails validation instead of failing inside the database.
 */
export const MAX_ADDRESS_BYTES = 1024;

const TABLE = 'actor_snapshots';
const INSERT_SNAPSHOT = 'insert into actor_snapshots (address, kind, version, state) values ($1, $2, $3, $4) on conflict (address) do nothing returning version';
const UPDATE_SNAPSHOT = 'update actor_snapshots set version = $1, state = $2, updated_at = current_timestamp where address = $3 and version = $4 returning version';

interface SnapshotRow {
  address: string;
  version: number | string;
  state: unknown;
  updated_at: Date;
}

export class KnexSnapshotStore implements SnapshotStore {
  /** Saves with a plain-SQL projection commit in groups (./commit-group.ts, decision 0045, second part). */
  private readonly groups: CommitGroups;

  constructor(private readonly knex: Knex, groupOptions: CommitGroupOptions = {}) {
    // PGlite has one connection: a second group in flight would only wait for it instead of joining the next.
    this.groups = new CommitGroups(knex, { ...(dbKind(knex) === 'pglite' ? { concurrency: 1 } : {}), ...groupOptions });
  }

  async load<S>(address: string): Promise<Snapshot<S> | undefined> {
    checkAddress(address);
    // Every actor's first message reads this, so it skips knex's builder like the hot saves do (decision 0045).
    const [row] = await sqlQuery<SnapshotRow>(this.knex, 'select address, version, state, updated_at from actor_snapshots where address = $1', [address]);
    if (!row) return undefined;
    return { address: row.address, version: Number(row.version), state: row.state as S, updatedAt: row.updated_at };
  }

  async save<S>(address: string, expectedVersion: number, state: S, project?: Projection): Promise<number> {
    checkAddress(address);
    checkVersion(expectedVersion);
    const json = serialise(state);
    const nextVersion = expectedVersion + 1;
    if (project !== undefined && typeof project !== 'function') return this.saveInSql(address, expectedVersion, json, project);
    return withStorageErrors(() =>
      this.knex.transaction(async (trx) => {
        const written =
          expectedVersion === 0
            ? await trx(TABLE)
                .insert({ address, kind: kindOf(address), version: nextVersion, state: json })
                .onConflict('address')
                .ignore()
                .returning('version')
            : await trx(TABLE)
                .update({ version: nextVersion, state: json, updated_at: trx.fn.now() })
                .where({ address, version: expectedVersion })
                .returning('version');
        if (written.length === 0) throw stale(address, expectedVersion);
        // The projection shares the transaction: if it throws, the snapshot write is rolled back with it.
        if (project) await project(trx);
        return nextVersion;
      }),
    );
  }

  /**
   * The same write in plain SQL, the projection on the same connection (decision 0045), committed with the other
   * saves waiting at that moment (decision 0045, second part). A stale version declines: it wrote nothing, the group goes on.
   * A projection in statement form rides in the snapshot's own statement (decision 0055).
   */
  private saveInSql(address: string, expectedVersion: number, json: string, project: SqlProjection): Promise<number> {
    const nextVersion = expectedVersion + 1;
    const [snapshotSql, snapshotValues] = expectedVersion === 0
      ? [INSERT_SNAPSHOT, [address, kindOf(address), nextVersion, json]]
      : [UPDATE_SNAPSHOT, [nextVersion, json, address, expectedVersion]];
    if ('statement' in project) {
      const statement = new TransitionStatement(snapshotSql, snapshotValues);
      const followUp = project.statement(statement);
      const write = async (tx: SqlTx): Promise<WriteOutcome<number>> => {
        const { version, returned } = await statement.run(tx);
        if (version === undefined) return { ok: false, error: stale(address, expectedVersion) };
        if (followUp !== undefined) await followUp(tx, returned);
        return { ok: true, value: nextVersion };
      };
      return this.groups.run(address, write, followUp === undefined);
    }
    return this.groups.run(address, async (tx): Promise<WriteOutcome<number>> => {
      const written = await tx.query(snapshotSql, snapshotValues);
      if (written.rows.length === 0) return { ok: false, error: stale(address, expectedVersion) };
      await project.sql(tx);
      return { ok: true, value: nextVersion };
    });
  }

  async remove(address: string, expectedVersion: number): Promise<void> {
    checkAddress(address);
    checkVersion(expectedVersion);
    // `returning` rather than the affected-row count: knex-pglite does not report a count for DELETE.
    const removed = await withStorageErrors(() =>
      this.knex(TABLE).where({ address, version: expectedVersion }).delete().returning('address'),
    );
    // Nothing to remove at version 0 is the expected outcome for an actor that never saved.
    if (removed.length === 0 && expectedVersion !== 0) throw stale(address, expectedVersion);
  }
}

/** The actor kind is the address up to its first '/' (`session/abc` → `session`). */
export function kindOf(address: string): string {
  const slash = address.indexOf('/');
  return slash === -1 ? address : address.slice(0, slash);
}

function checkAddress(address: unknown): asserts address is string {
  if (typeof address !== 'string' || address.length === 0) {
    throw new TroupeError('VALIDATION_FAILED', 'actor address must be a non-empty string');
  }
  if (Buffer.byteLength(address, 'utf8') > MAX_ADDRESS_BYTES) {
    throw new TroupeError('VALIDATION_FAILED', `actor address exceeds ${MAX_ADDRESS_BYTES} bytes`);
  }
  if (address.includes('\u0000')) {
    throw new TroupeError('VALIDATION_FAILED', 'actor address contains a NUL character');
  }
}

function checkVersion(version: unknown): asserts version is number {
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
    throw new TroupeError('INTERNAL', `expected version must be a non-negative integer, got ${String(version)}`);
  }
}

/** Always hand jsonb a JSON string: pg would turn a bare JS array into a Postgres array literal. */
function serialise(state: unknown): string {
  const json = JSON.stringify(state);
  if (json === undefined) throw new TroupeError('INTERNAL', 'actor state is not JSON-serialisable');
  return json;
}

function stale(address: string, expectedVersion: number): TroupeError {
  return new TroupeError('STORAGE_STALE_VERSION', undefined, { address, expectedVersion });
}
