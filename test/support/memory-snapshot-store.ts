import { TroupeError } from '../../ops/kernel/errors.js';
import type { Projection, Snapshot, SnapshotStore } from '../../storage/snapshot-store.js';

/**
 * An in-memory SnapshotStore for unit tests of logic only (the runtime, machines). It keeps the same contract
 * as the real store: versions fenced on every write, states stored as JSON text so nothing shares references
 * with the actor and anything that does not survive serialisation shows up.
 *
 * Projections are NOT run: they take a database transaction and there is none here. The store only counts
 * them, so a test can see that the runtime offered one. Read-model tests belong against the knex store.
 *
 * Faults are injected explicitly: `holdSaves` parks writes until released, `failSavesWith` / `failLoadsWith`
 * make calls throw, `loseCommitRepliesWith` commits and then throws, `writeAsAnotherOwner` bumps a version behind the actor's back.
 */
export class MemorySnapshotStore implements SnapshotStore {
  private readonly rows = new Map<string, { version: number; json: string; updatedAt: Date }>();
  private saveFailure: unknown;
  private lostReply: unknown;
  private loadFailure: unknown;
  private hold: SaveHold | undefined;
  loads = 0;
  saves = 0;
  projectionsOffered = 0;

  async load<S>(address: string): Promise<Snapshot<S> | undefined> {
    this.loads += 1;
    if (this.loadFailure !== undefined) throw this.loadFailure;
    const row = this.rows.get(address);
    return row === undefined
      ? undefined
      : { address, version: row.version, state: JSON.parse(row.json) as S, updatedAt: row.updatedAt };
  }

  async save<S>(address: string, expectedVersion: number, state: S, project?: Projection): Promise<number> {
    this.saves += 1;
    if (this.hold !== undefined) await this.hold.wait();
    if (this.saveFailure !== undefined) throw this.saveFailure;
    // The version is checked after any hold: another writer may have written while this save was in flight.
    const current = this.rows.get(address)?.version ?? 0;
    if (current !== expectedVersion) {
      throw new TroupeError('STORAGE_STALE_VERSION', undefined, { address, expectedVersion, storedVersion: current });
    }
    if (project !== undefined) this.projectionsOffered += 1;
    const version = current + 1;
    this.rows.set(address, { version, json: JSON.stringify(state), updatedAt: new Date() });
    // The commit happened; its answer did not arrive (a connection cut during COMMIT).
    if (this.lostReply !== undefined) throw this.lostReply;
    return version;
  }

  async remove(address: string, expectedVersion: number): Promise<void> {
    const current = this.rows.get(address)?.version ?? 0;
    if (current !== expectedVersion) {
      throw new TroupeError('STORAGE_STALE_VERSION', undefined, { address, expectedVersion, storedVersion: current });
    }
    this.rows.delete(address);
  }

  /** What is durable for `address` right now. */
  stored<S>(address: string): { version: number; state: S } | undefined {
    const row = this.rows.get(address);
    return row === undefined ? undefined : { version: row.version, state: JSON.parse(row.json) as S };
  }

  /** Simulates another node owning the actor and writing a newer state. */
  writeAsAnotherOwner<S>(address: string, state: S): number {
    const version = (this.rows.get(address)?.version ?? 0) + 1;
    this.rows.set(address, { version, json: JSON.stringify(state), updatedAt: new Date() });
    return version;
  }

  /** Every later save throws `error` until called again with `undefined`. */
  failSavesWith(error: unknown): void {
    this.saveFailure = error;
  }

  /** Every later save commits and then throws `error`, as when the link drops after COMMIT, until called with undefined. */
  loseCommitRepliesWith(error: unknown): void {
    this.lostReply = error;
  }

  failLoadsWith(error: unknown): void {
    this.loadFailure = error;
  }

  /** Parks every save (current and later) until `release()`; `arrived` resolves when the first one is parked. */
  holdSaves(): SaveHold {
    const hold = new SaveHold(() => { if (this.hold === hold) this.hold = undefined; });
    this.hold = hold;
    return hold;
  }
}

export class SaveHold {
  private releaseAll!: () => void;
  private readonly released: Promise<void>;
  private signalArrival!: () => void;
  /** Resolves once a save is parked behind this hold. */
  readonly arrived: Promise<void>;
  parked = 0;

  constructor(private readonly onRelease: () => void) {
    this.released = new Promise((resolve) => { this.releaseAll = resolve; });
    this.arrived = new Promise((resolve) => { this.signalArrival = resolve; });
  }

  wait(): Promise<void> {
    this.parked += 1;
    this.signalArrival();
    return this.released;
  }

  release(): void {
    this.onRelease();
    this.releaseAll();
  }
}
