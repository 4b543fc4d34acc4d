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
 *
 * `onSilent` (decision 0058): a missed deadline while other queries are waiting too and no query on any connection of
 * this knex has been answered for `silentMs` (a third of the deadline) means the server, not the query, has stopped:
 * the caller opens the connection breaker then, so every other request is refused at once instead of each waiting out
 * a deadline or a connection timeout of its own (the breaker used to open only when a new connection timed out, ~3 s
 * later). A missed deadline while other queries are being answered, or while no other is waiting (an idle node), is
 * one slow query (a lock wait, one tenant's heavy read): only its own connection is dropped, and nobody else is
 * refused for it.
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
  /** performance.now() of the last answer from the server (a result or an error it sent) on any connection. */
  lastAnswer: number;
  /** Queries sent and not yet settled, on every connection. */
  outstanding: number;
  readonly silentMs: number;
  readonly onSilent: ((reason: string) => void) | undefined;
}

export interface QueryDeadlineOptions {
  /** Called when a query misses its deadline and the server has answered nothing for `silentMs`. */
  readonly onSilent?: (reason: string) => void;
  /** @default a third of the deadline (1 s of the default 3 s): long past any round trip of a server that answers */
  readonly silentMs?: number;
}

const deadlines = new WeakMap<Knex, Deadline>();

export interface QueryDeadlineHandle {
  /** Whether the server answered a query on any connection within the last `silentMs`. */
  answeringNow(): boolean;
}

export function installQueryDeadline(knex: Knex, ms: number, options: QueryDeadlineOptions = {}): QueryDeadlineHandle {
  const deadline: Deadline = { ms, suspended: 0, lastAnswer: performance.now(), outstanding: 0, silentMs: options.silentMs ?? ms / 3, onSilent: options.onSilent };
  deadlines.set(knex, deadline);
  // knex types its client as `any`; this is the internal of it the deadline wraps.
  const client = knex.client as RawConnectionClient;
  const acquireRaw = client.acquireRawConnection.bind(client);
  client.acquireRawConnection = async () => guard(await acquireRaw(), deadline);
  return { answeringNow: () => performance.now() - deadline.lastAnswer < deadline.silentMs };
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
      const reason = `no answer to a query within ${ms} ms`;
      // Counted before this connection is dropped: others that fail with it were waiting too.
      const othersWaiting = deadline.outstanding - 1;
      connection.__knex__disposed = reason;
      connection.connection?.stream?.destroy();
      // Silence is judged after this turn's I/O: on a late event loop, answers that arrived meanwhile are read first.
      setImmediate(() => {
        const silentFor = performance.now() - deadline.lastAnswer;
        if (silentFor >= deadline.silentMs && othersWaiting > 0) {
          deadline.onSilent?.(`${reason}, nor to any other for ${Math.round(silentFor)} ms with ${othersWaiting} more waiting`);
        }
      });
    }, ms);
    deadline.outstanding += 1;
    let done = false;
    const settled = (err?: unknown) => {
      if (done) return;
      done = true;
      deadline.outstanding -= 1;
      clearTimeout(timer);
      if (err === undefined || err === null || answeredByServer(err)) deadline.lastAnswer = performance.now();
    };
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (...results: unknown[]) => {
        settled(results[0]);
        (callback as (...r: unknown[]) => void)(...results);
      };
      return query(...args);
    }
    const pending = query(...args) as Promise<unknown>;
    pending.then(() => settled(), settled);
    return pending;
  };
  return connection;
}

/** An error Postgres itself sent (it carries a SQLSTATE) proves the server answers; a dropped socket does not. */
function answeredByServer(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}
