import type { Knex } from 'knex';
import { dbKind } from './db.js';
import { withStorageErrors } from './storage-errors.js';

/**
 * A transaction in plain SQL on one of knex's pooled connections (Postgres or PGlite), for the hot write paths
 * (decision 0045). A knex transaction builds a whole knex instance for every BEGIN and compiles every statement
 * from a builder; on the session lifecycle that was about a third of the node's CPU. Statements here are SQL text
 * with `$1…` parameters, the same text on both engines.
 */
export interface SqlTx {
  /**
   * Runs one statement; `count` is the number of rows it inserted, updated or deleted (read `rows` for a SELECT);
   * `command` its tag's verb where the driver reports it (Postgres: a COMMIT of an aborted transaction says ROLLBACK).
   */
  query<R = Record<string, any>>(text: string, values?: readonly unknown[]): Promise<{ readonly rows: R[]; readonly count: number; readonly command?: string }>;
}

/** What knex's pool hands out on both engines: a pg Client, or the PGlite instance. */
interface RawConnection {
  query(text: string | { name: string; text: string; values?: unknown[] }, values?: unknown[]): Promise<{ rows: any[]; rowCount?: number | null; affectedRows?: number; command?: string }>;
}

interface PoolClient {
  acquireConnection(): Promise<RawConnection>;
  releaseConnection(connection: RawConnection): Promise<void>;
}

/**
 * Statement names on Postgres, one per distinct text, the same on every connection: pg parses a named statement once
 * per connection and then only binds it, so Postgres skips parsing and planning the long statements of the session
 * path on every call (decision 0055). Texts built with a varying number of parameters would each take a name, so
 * past the bound the rest go unnamed.
 */
const names = new Map<string, string>();
const MAX_NAMED = 512;

function nameOf(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_NAMED) {
    name = `troupe_${names.size}`;
    names.set(text, name);
  }
  return name;
}

function txOn(connection: RawConnection, named: boolean): SqlTx {
  return {
    async query(text, values) {
      const name = named ? nameOf(text) : undefined;
      const result = name === undefined
        ? await connection.query(text, values as unknown[] | undefined)
        : await connection.query({ name, text, values: values as unknown[] | undefined });
      return { rows: result.rows, count: result.rowCount ?? result.affectedRows ?? result.rows.length, command: result.command };
    },
  };
}

/** A pooled connection as an SqlTx, until `release` gives it back to knex's pool. */
export interface SqlConnection {
  readonly tx: SqlTx;
  /**
   * Runs `issue`, which starts statements on `tx` and returns at once, with the connection pipelining: each statement
   * is sent without waiting for the answer to the one before, and all of them leave in one write. Undefined where
   * the driver cannot (PGlite; a pg without pipeline mode). Release the connection only once every statement issued
   * has settled.
   */
  readonly pipeline?: <T>(issue: () => T) => T;
  release(): Promise<void>;
}

/** The parts of a pg Client that pipelining a batch touches (pg ≥ 8.23 has pipeline mode, a client option). */
interface PipelinableClient {
  pipeline: boolean;
  readonly connection: { readonly stream: { cork(): void; uncork(): void } };
}

function isPipelinable(connection: unknown): connection is PipelinableClient {
  const c = connection as Partial<PipelinableClient>;
  return typeof c.pipeline === 'boolean' && typeof c.connection?.stream?.cork === 'function';
}

export async function acquireSqlConnection(knex: Knex): Promise<SqlConnection> {
  // knex types its client as `any`; these are the internals of it a batch borrows a connection through.
  const pool = knex.client as PoolClient;
  const connection = await pool.acquireConnection();
  const postgres = dbKind(knex) === 'postgres';
  const tx = txOn(connection, postgres);
  if (!postgres || !isPipelinable(connection)) return { tx, release: () => pool.releaseConnection(connection) };
  // Pipeline mode is switched on for one batch, not for the pool: knex's own queries, and a streamed read (which pg
  // refuses in pipeline mode), run on these connections too. An idle client switches safely: nothing is in flight.
  return {
    tx,
    pipeline(issue) {
      connection.pipeline = true;
      const socket = connection.connection.stream;
      socket.cork();
      try {
        return issue();
      } finally {
        socket.uncork();
      }
    },
    release() {
      connection.pipeline = false;
      return pool.releaseConnection(connection);
    },
  };
}

/**
 * One statement on a pooled connection, outside any transaction, without knex's builder: for reads on the hot paths
 * (a dispatch's project check and router arms, an actor's snapshot load), where compiling a builder cost more node
 * CPU than the round trip (decisions 0045, 0055).
 */
export function sqlQuery<R = Record<string, any>>(knex: Knex, text: string, values?: readonly unknown[]): Promise<R[]> {
  return withStorageErrors(async () => {
    const { tx, release } = await acquireSqlConnection(knex);
    try {
      return (await tx.query<R>(text, values)).rows;
    } finally {
      await release();
    }
  });
}

/**
 * Runs `work` between BEGIN and COMMIT on one connection, and rolls back if it throws. Driver failures are
 * classified as everywhere else in storage (a lost connection is STORAGE_UNAVAILABLE); a connection that broke is
 * discarded by the pool's own validation when next acquired.
 */
export function inSqlTransaction<T>(knex: Knex, work: (tx: SqlTx) => Promise<T>): Promise<T> {
  return withStorageErrors(async () => {
    const { tx, release } = await acquireSqlConnection(knex);
    try {
      await tx.query('begin');
      let result: T;
      try {
        result = await work(tx);
      } catch (err) {
        await tx.query('rollback').catch(() => undefined);
        throw err;
      }
      await tx.query('commit');
      return result;
    } finally {
      await release();
    }
  });
}
