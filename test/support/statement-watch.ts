import type { Knex } from 'knex';

/**
 * One statement sent down a pooled connection: its SQL text, the connection's number in order of first use, and what
 * the driver returned for it (the answer's promise, or nothing for a query made with a callback, as knex makes them).
 */
export interface SentStatement {
  readonly text: string;
  readonly connection: number;
  readonly returned: unknown;
}

type Connection = { query: (...args: unknown[]) => unknown };

/**
 * Runs `work` and tells `onSend` of every statement sent down `knex`'s pooled connections meanwhile: builder queries and
 * plain SQL alike, as the pool hands connections out. Each connection is wrapped once (PGlite has one, and pg's pool
 * hands the same ones out again), and put back as it was when `work` is done (on Postgres, the query deadline's guard).
 */
export async function watchStatements(knex: Knex, onSend: (sent: SentStatement) => void, work: () => Promise<unknown>): Promise<void> {
  const pool = knex.client as unknown as { acquireConnection(): Promise<Connection> };
  const acquire = pool.acquireConnection;
  const wrapped = new WeakSet<object>();
  const restore: Array<() => void> = [];
  pool.acquireConnection = async function (this: unknown) {
    const connection = await acquire.call(this);
    if (wrapped.has(connection)) return connection;
    wrapped.add(connection);
    const number = restore.length;
    const query = connection.query;
    connection.query = function (this: unknown, text: unknown, ...rest: unknown[]) {
      // On Postgres the hot statements go as named ones (storage/sql-tx.ts): `{ name, text, values }`.
      const sql = typeof text === 'string' ? text : String((text as { text?: unknown }).text);
      const answer = query.call(this, text, ...rest);
      onSend({ text: sql, connection: number, returned: answer });
      return answer;
    };
    restore.push(() => { connection.query = query; });
    return connection;
  };
  try {
    await work();
  } finally {
    pool.acquireConnection = acquire;
    for (const r of restore) r();
  }
}
