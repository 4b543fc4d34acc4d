import type { Knex } from 'knex';

/**
 * A deadline for every query a Postgres knex sends (issue 20: a hung Postgres, SIGSTOP, must cost callers a 503,
 * not a hung request). A stopped server keeps its sockets open and answers nothing: no error ever reaches the
 * driver, the connection breaker (connection-breaker.ts) sees no failed connection, and each query waits for ever,
 * holding its pooled connection, until the pool is exhausted and everything else waits for it.
 *
 * Past the deadline the query's connection is destroyed: the query (and any queued behind it on that connection)
 * fails with "Connection terminated", which the storage boundary answers as STORAGE_UNAVAILABLE, and knex drops
 * the connection instead of handing it out again. The pool then opens new connections, which time out against a
 * hung server and open the breaker, so later queries are refused at once.
 *
 * Why not pg's own `query_timeout`: it leaves a query that was already sent on its connection, which the pool then
 * hands to the next caller to wait behind it. Why not only `statement_timeout`: a stopped server enforces nothing.
 * Why on each connection rather than knex's client: a transaction runs on a copy of the client made from its
 * prototype, which would not see a patch of the instance.
 *
 * A query that outlives the deadline on a healthy server fails the same way: nothing on a request path should take
 * seconds. Migrations may (an index on a large table), so `suspendQueryDeadline` lifts it while they run.
 */
interface PgConnection {
  query(...args: unknown[]): unknown;
  connection?: { stream?: { destroy(err?: Error): void } };
  __knex__disposed?: unknown;
}

interface RawConnectionClient {
  acquireRawConnection(): Promise<PgConnection>;
}

interface Deadline {
  ms: number | undefined;
  suspended: number;
}

const deadlines = new WeakMap<Knex, Deadline>();

export function installQueryDeadline(knex: Knex, ms: number): void {
  const deadline: Deadline = { ms, suspended: 0 };
  deadlines.set(knex, deadline);
  const client = knex.client as unknown as RawConnectionClient;
  const acquireRaw = client.acquireRawConnection.bind(client);
  client.acquireRawConnection = async () => guard(await acquireRaw(), deadline);
}

/** Runs `work` with no deadline on this knex's queries (migrations); other work meanwhile has none either. */
export async function suspendQueryDeadline<T>(knex: Knex, work: () => Promise<T>): Promise<T> {
  const deadline = deadlines.get(knex);
  if (deadline === undefined) return work();
  deadline.suspended += 1;
  try {
    return await work();
  } finally {
    deadline.suspended -= 1;
  }
}

function guard(connection: PgConnection, deadline: Deadline): PgConnection {
  const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
  // Both of pg's forms: knex's builder passes a callback, the plain-SQL paths (sql-tx.ts, commit groups) take the
  // promise. A streamed query (a Submittable) runs as long as its reader wants and goes through untouched.
  connection.query = (...args: unknown[]) => {
    const ms = deadline.ms;
    if (ms === undefined || deadline.suspended > 0 || typeof (args[0] as { submit?: unknown } | null)?.submit === 'function') return query(...args);
    const timer = setTimeout(() => {
      connection.__knex__disposed = `no answer to a query within ${ms} ms`;
      connection.connection?.stream?.destroy();
    }, ms);
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (...results: unknown[]) => {
        clearTimeout(timer);
        (callback as (...r: unknown[]) => void)(...results);
      };
      return query(...args);
    }
    const pending = query(...args) as Promise<unknown>;
    pending.then(() => clearTimeout(timer), () => clearTimeout(timer));
    return pending;
  };
  return connection;
}
