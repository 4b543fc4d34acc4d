import type { SqlTx } from './sql-tx.js';

/**
 * An actor's whole transition as one statement (decision 0055): the snapshot's fenced write is a data-modifying
 * `with` part named `snapshot`, and each read-model write of the projection is a further part that gates itself on
 * it (`where ${APPLIED}`) or on another part. A data-modifying `with` runs once and to completion whether or not
 * anything reads it, and every part sees the database as it was before the statement, so the parts must touch
 * different rows; a stale version fence leaves `snapshot` empty and then no part writes anything.
 *
 * Writes that need to read what an earlier write left (an issue lock taken under an advisory lock, a phase record
 * found and closed) are a follow-up: statements run after this one in the same transaction.
 */
export const APPLIED = 'exists (select from snapshot)';

export class TransitionStatement {
  private readonly values: unknown[];
  private readonly parts: string[];
  private readonly reported: string[] = [];

  /** `snapshotSql` uses `$1…$n` for `snapshotValues` and returns the new `version`. */
  constructor(snapshotSql: string, snapshotValues: readonly unknown[]) {
    this.values = [...snapshotValues];
    this.parts = [`snapshot as (${snapshotSql})`];
  }

  /** The placeholder of a new parameter. */
  value(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }

  /** Placeholders for several parameters, comma-separated, in order. */
  list(vs: readonly unknown[]): string {
    return vs.map((v) => this.value(v)).join(', ');
  }

  /**
   * Adds the part `name as (sql)`. `report`: the statement's result says whether it returned a row (its `returning`),
   * for a follow-up that depends on it.
   */
  part(name: string, sql: string, report = false): void {
    this.parts.push(`${name} as (${sql})`);
    if (report) this.reported.push(name);
  }

  get text(): string {
    const columns = ['(select version from snapshot) as version', ...this.reported.map((n) => `exists (select from ${n}) as "${n}"`)];
    return `with ${this.parts.join(',\n')}\nselect ${columns.join(', ')}`;
  }

  get params(): readonly unknown[] {
    return this.values;
  }

  /** Runs it: the new version, or undefined when the fence declined (then nothing was written), and the reported parts that returned a row. */
  async run(tx: SqlTx): Promise<{ version: number | undefined; returned: ReadonlySet<string> }> {
    const row = (await tx.query<Record<string, unknown>>(this.text, this.params)).rows[0] ?? {};
    const version = row['version'] === null || row['version'] === undefined ? undefined : Number(row['version']);
    return { version, returned: new Set(this.reported.filter((n) => row[n] === true)) };
  }
}

/** Statements that follow the transition's own in its transaction, given the reported parts that returned a row. */
export type FollowUp = (tx: SqlTx, returned: ReadonlySet<string>) => Promise<void>;
