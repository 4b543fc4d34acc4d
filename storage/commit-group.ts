import type { Knex } from 'knex';
import { acquireSqlConnection, type SqlConnection, type SqlTx } from './sql-tx.js';
import { isStorageUnavailable, toStorageError } from './storage-errors.js';

/**
 * Group commit (decision 0045, second part): writes that arrive while another group is committing wait and then share one
 * transaction, so a busy node pays one BEGIN, one COMMIT and one pooled connection per group instead of per write,
 * and Postgres flushes its log once for all of them. An idle node commits each write at once, alone.
 *
 * A write either applies (its statements ran) or declines (`{ ok: false }`: it found nothing to do, wrote nothing,
 * and the transaction is still good, e.g. a stale version fence); the others of its group still commit. A write that
 * throws has left the transaction in an unknown state, so the whole group rolls back and every write of it is run
 * again in a transaction of its own, in arrival order: each then meets exactly the outcome it would have met alone.
 * A failed COMMIT fails every write of the group, as it would have failed each alone.
 *
 * Writes run in the order of their keys (an actor's address), so a group locks rows in the order the sorted batch
 * writers do (liveness, step heartbeats) and cannot deadlock with them. Two groups in flight (on one node or two)
 * that touch the same shared rows (two orgs' fleet quotas) in opposite orders can: Postgres then aborts one after
 * `deadlock_timeout`, and its writes run again alone.
 */
export type WriteOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

export type GroupedWrite<T> = (tx: SqlTx) => Promise<WriteOutcome<T>>;

interface Pending {
  readonly key: string;
  readonly write: GroupedWrite<unknown>;
  /** The write is one statement: alone, it needs no BEGIN and COMMIT of its own (decision 0055). */
  readonly single: boolean;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

export interface CommitGroupOptions {
  /**
   * Groups committing at once. One alone made writes wait for whole groups in turn (lifecycle bench: 0.92 of the
   * rate without groups, p99 119 ms at half rate); four keep most of the saving and the latency (decision 0045, second part).
   * @default 4
   */
  readonly concurrency?: number;
  /** Writes in one group at most. @default 64 */
  readonly maxGroup?: number;
}

/** Never rejects: a promise made by `run` that rejects, or a `run` that throws, settles as a failed outcome. */
async function settle<T>(run: () => Promise<T>): Promise<WriteOutcome<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error };
  }
}

export class CommitGroups {
  private readonly waiting: Pending[] = [];
  private running = 0;
  private readonly concurrency: number;
  private readonly maxGroup: number;

  constructor(private readonly knex: Knex, options: CommitGroupOptions = {}) {
    this.concurrency = options.concurrency ?? 4;
    this.maxGroup = options.maxGroup ?? 64;
  }

  /**
   * Resolves with the write's value once its group has committed; rejects with its own error otherwise. `single`: the
   * write issues exactly one statement, so when it finds itself alone in its group that statement commits by itself
   * (one round trip instead of three; a statement is atomic, and a declining one wrote nothing).
   */
  run<T>(key: string, write: GroupedWrite<T>, single = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ key, write, single, resolve: resolve as (value: unknown) => void, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.concurrency && this.waiting.length > 0) {
      const group = this.waiting.splice(0, this.maxGroup).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      this.running += 1;
      // Should the runner itself fail (a pool that will not take its connection back), nobody is left waiting;
      // settling a write that has already settled does nothing.
      void this.commit(group).catch((err: unknown) => {
        for (const p of group) p.reject(toStorageError(err));
      }).finally(() => {
        this.running -= 1;
        this.pump();
      });
    }
  }

  private async commit(group: Pending[]): Promise<void> {
    const failure = await this.attempt(group);
    if (failure === undefined) return;
    // Unreachable storage fails each write alone just the same; trying them one by one only makes the callers wait.
    if (failure.atCommit || group.length === 1 || isStorageUnavailable(failure.error)) {
      const error = toStorageError(failure.error);
      for (const p of group) p.reject(error);
      return;
    }
    // Someone's statement failed and took the group's transaction with it: each write again, alone.
    for (const p of group) {
      const alone = await this.attempt([p]);
      if (alone !== undefined) p.reject(toStorageError(alone.error));
    }
  }

  /** One transaction for `group`; settles every write when it commits, or says what failed. */
  private async attempt(group: Pending[]): Promise<{ error: unknown; atCommit: boolean } | undefined> {
    let connection;
    try {
      connection = await acquireSqlConnection(this.knex);
    } catch (error) {
      return { error, atCommit: false };
    }
    if (group.length === 1 && group[0]!.single) return this.alone(group[0]!, connection);
    if (connection.pipeline !== undefined && group.every((p) => p.single)) return this.pipelined(group, connection, connection.pipeline);
    const outcomes: WriteOutcome<unknown>[] = [];
    try {
      await connection.tx.query('begin');
      for (const p of group) outcomes.push(await p.write(connection.tx));
    } catch (error) {
      await connection.tx.query('rollback').catch(() => undefined);
      await connection.release();
      return { error, atCommit: false };
    }
    try {
      await connection.tx.query('commit');
    } catch (error) {
      await connection.release();
      return { error, atCommit: true };
    }
    await connection.release();
    group.forEach((p, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) p.resolve(outcome.value);
      else p.reject(outcome.error);
    });
    return undefined;
  }

  /**
   * A group of one-statement writes, pipelined (decision 0062): BEGIN, every write's statement and COMMIT leave in one
   * write and come back in one read, where one after another they cost a round trip each (two more than the group).
   * Each write issues its statement before its first await, so all of them are on the wire before COMMIT.
   *
   * What COMMIT answers decides. `COMMIT`: every statement is durable, and each write settles as it ended, never run
   * again (one that failed after its statement, a bug, fails alone). `ROLLBACK`: a statement failed and aborted the
   * transaction, the ones after it failed too, nothing was written, and the group is run again write by write as when
   * run in turn. An error: the outcome is unknown, and every write fails as with a failed COMMIT.
   */
  private async pipelined(
    group: Pending[], connection: SqlConnection, pipeline: NonNullable<SqlConnection['pipeline']>,
  ): Promise<{ error: unknown; atCommit: boolean } | undefined> {
    let issuing = true;
    const tx: SqlTx = {
      query(text, values) {
        // After COMMIT was sent, a statement would run outside the transaction: a write that said it was one is a bug.
        if (!issuing) return Promise.reject(new Error('a single-statement write issued a statement after its first await'));
        return connection.tx.query(text, values);
      },
    };
    const [begun, writes, committed] = pipeline(() => {
      try {
        return [connection.tx.query('begin'), group.map((p) => settle(() => p.write(tx))), connection.tx.query('commit')] as const;
      } finally {
        issuing = false;
      }
    });
    const [began, outcomes, commit] = await Promise.all([settle(() => begun), Promise.all(writes), settle(() => committed)]);
    await connection.release();
    // Without BEGIN the statements ran on their own: what they did is not known as a group's.
    if (!began.ok) return { error: began.error, atCommit: true };
    if (!commit.ok) return { error: commit.error, atCommit: true };
    if (commit.value.command !== 'COMMIT') {
      const failed = outcomes.find((o): o is { ok: false; error: unknown } => !o.ok);
      return { error: failed?.error ?? new Error(`the group's COMMIT answered ${commit.value.command ?? 'nothing'}`), atCommit: false };
    }
    group.forEach((p, i) => {
      const settled = outcomes[i]!;
      if (!settled.ok) p.reject(settled.error);
      else if (settled.value.ok) p.resolve(settled.value.value);
      else p.reject(settled.value.error);
    });
    return undefined;
  }

  /** A one-statement write in autocommit: it applied, declined or failed as a whole, with nothing to roll back. */
  private async alone(p: Pending, connection: SqlConnection): Promise<{ error: unknown; atCommit: boolean } | undefined> {
    let statements = 0;
    const tx: SqlTx = {
      query(text, values) {
        statements += 1;
        // Two statements outside a transaction would not be atomic: a write that said it was one is a bug.
        if (statements > 1) return Promise.reject(new Error('a single-statement write issued a second statement'));
        return connection.tx.query(text, values);
      },
    };
    let outcome: WriteOutcome<unknown>;
    try {
      outcome = await p.write(tx);
    } catch (error) {
      return { error, atCommit: false };
    } finally {
      await connection.release();
    }
    if (outcome.ok) p.resolve(outcome.value);
    else p.reject(outcome.error);
    return undefined;
  }
}
