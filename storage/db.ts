import '../ops/kernel/wasm-inlining-off.js';
import '../ops/kernel/wasm-tier-up-later.js';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import knexModule, { type Knex } from 'knex';
import type { PGlite } from '@electric-sql/pglite';
import { TroupeError } from '../ops/kernel/errors.js';
import { ConnectionBreaker } from './connection-breaker.js';
import { installQueryDeadline, type QueryDeadlineHandle } from './query-deadline.js';

/**
 * One knex instance per node, on Postgres (`pg`) when a URL is configured, otherwise on PGlite (Postgres compiled
 * to WASM) under the data directory. Both speak the same SQL, so migrations, stores and read models are written
 * once. See ops/decisions/0002-storage-layout.md.
 *
 * Each engine's driver is imported when a database of that kind is opened, not with this module: a node on
 * Postgres never loads PGlite and its client, an embedded node never loads `pg` (decision 0051).
 */
export interface DbOptions {
  /** postgres://… selects Postgres. */
  databaseUrl?: string;
  /** PGlite keeps its files in `<dataDir>/pglite`. */
  dataDir?: string;
  /** PGlite in memory, for tests and throwaway runs. */
  inMemory?: boolean;
  /** An already-open PGlite to use instead (tests clone a pre-migrated template with `loadDataDir`). */
  pglite?: PGlite;
  /** A schema to work in (created when missing); tests isolate themselves this way. */
  searchPath?: string;
  /** Postgres pool size; PGlite always has exactly one connection. @default 10 */
  poolMax?: number;
  /**
   * Postgres: a query unanswered after this long has its connection dropped and fails as STORAGE_UNAVAILABLE
   * (storage/query-deadline.ts). @default 3000
   */
  queryTimeoutMs?: number;
  /** Receives knex's own warnings (pool errors, deprecations); defaults to knex's console output. */
  log?: { warn(msg: string): void; error(msg: string): void; debug(msg: string): void };
}

export type DbKind = 'postgres' | 'pglite';

/**
 * How long a pooled query waits for a connection, and a new connection for Postgres to answer. Short, so that a
 * dead database turns into STORAGE_UNAVAILABLE within seconds instead of stalling requests for knex's default minute.
 */
const ACQUIRE_TIMEOUT_MS = 5_000;
const CONNECT_TIMEOUT_MS = 3_000;
const PING_TIMEOUT_MS = 2_000;
const QUERY_TIMEOUT_MS = 3_000;

const INT8_OID = 20;

/**
 * pg returns bigint as a string, PGlite as a number; code that reads counts, versions or sequence numbers must not
 * care which engine it runs on, so pg is told to parse int8 to a number too. A value beyond 2^53 stays a string
 * rather than silently losing precision.
 */
function pgTypes(pg: typeof import('pg').default) {
  return {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === INT8_OID && format !== 'binary') {
        return (text: string) => {
          const n = Number(text);
          return Number.isSafeInteger(n) ? n : text;
        };
      }
      return pg.types.getTypeParser(oid, format ?? 'text');
    },
  };
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export async function createDb(opts: DbOptions): Promise<Knex> {
  if (opts.searchPath !== undefined && !SCHEMA_NAME.test(opts.searchPath)) {
    throw new TroupeError('INTERNAL', `invalid schema name for searchPath: ${JSON.stringify(opts.searchPath)}`);
  }
  const knex = opts.databaseUrl && !opts.pglite ? await openPostgres(opts.databaseUrl, opts) : await openPglite(opts);
  if (opts.searchPath !== undefined) {
    try {
      await knex.raw(`create schema if not exists "${opts.searchPath}"`);
    } catch (err) {
      await knex.destroy().catch(() => undefined);
      throw err;
    }
  }
  return knex;
}

async function openPostgres(databaseUrl: string, opts: DbOptions): Promise<Knex> {
  const { default: pg } = await import('pg');
  const config: Knex.Config = {
    client: 'pg',
    connection: { connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, types: pgTypes(pg) } as Knex.PgConnectionConfig,
    // min 0: idle connections are released, so a database restart leaves no stale sockets behind in the pool.
    pool: { min: 0, max: opts.poolMax ?? 10 },
    acquireConnectionTimeout: ACQUIRE_TIMEOUT_MS,
    ...(opts.searchPath !== undefined ? { searchPath: [opts.searchPath] } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  };
  const knex = knexModule(config);
  let deadline: QueryDeadlineHandle | undefined;
  const breaker = ConnectionBreaker.install(knex, {
    // A trial answers `select 1` before the breaker closes: a hung server's idle pooled connections are still open.
    probe: (connection) => (connection as { query(sql: string): Promise<unknown> }).query('select 1'),
    serverAnswering: () => deadline?.answeringNow() === true,
    onChange: (open, reason) => {
      if (open) opts.log?.warn(`postgres is unreachable (${reason}): queries fail at once with STORAGE_UNAVAILABLE until a connection is made again`);
      else opts.log?.warn('postgres accepts connections again: the storage breaker closed');
    },
  });
  // The first query to miss its deadline while the server answers nothing else opens the breaker (decision 0058).
  deadline = installQueryDeadline(knex, opts.queryTimeoutMs ?? QUERY_TIMEOUT_MS, { onSilent: (reason) => breaker.trip(reason) });
  return knex;
}

/**
 * Postgres's own default sizes shared memory for a server: 128 MB of shared buffers, set up at start inside the
 * node's WebAssembly heap. On an idle embedded node that was about 110 MB of its resident memory (G10, decision
 * 0046); 16 MB keeps a small deployment's working set cached, and the operating system caches the data files too.
 */
export const EMBEDDED_SHARED_BUFFERS = '16MB';
export const EMBEDDED_RANDOM_PAGE_COST = 1.1;

/** knex's client class for PGlite, once an embedded database has been opened: what `dbKind` tells engines apart by. */
let ClientPgLite: (new (...args: never[]) => unknown) | undefined;

async function openPglite(opts: DbOptions): Promise<Knex> {
  const [{ PGlite: PGliteDatabase }, { default: pgliteClient }] = await Promise.all([import('@electric-sql/pglite'), import('knex-pglite')]);
  ClientPgLite = pgliteClient;
  const client = yieldingBetweenStatements(pgliteClient);
  let pglite = opts.pglite;
  if (!pglite) {
    const dir = opts.inMemory ? undefined : path.resolve(opts.dataDir ?? './data', 'pglite');
    if (dir !== undefined) await mkdir(dir, { recursive: true });
    pglite = new PGliteDatabase({
      ...(dir === undefined ? {} : { dataDir: dir }),
      startParams: [...PGliteDatabase.defaultStartParams, '-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`],
    });
  }
  // Starting PGlite (initdb or loading the data directory) takes seconds, and tens of them on a busy machine. It
  // finishes here, before knex sees the database: inside knex's pool it would count against the pool's 30 s limit
  // for creating a connection, and a slow but healthy start would fail. A broken data directory still fails at boot.
  try {
    await pglite.waitReady;
    // The embedded database's pages are in memory or the page cache, where a random read costs what a sequential
    // one does. With Postgres's default of 4 the planner chose a sequential scan of every worker for each liveness
    // batch of 50 (decision 0059: ~3x the CPU of the index plan at 10,000 workers); 1.1 is the usual figure for SSDs.
    await pglite.exec(`set random_page_cost = ${EMBEDDED_RANDOM_PAGE_COST}`);
  } catch (err) {
    await pglite.close().catch(() => undefined);
    throw err;
  }
  const open = pglite;
  // knex-pglite pins the pool to one connection: PGlite is a single-user database, so queries and transactions
  // from this node are serialised through that connection. Destroying knex closes the PGlite.
  const knex = knexModule({
    client,
    dialect: 'postgres',
    // knex's types know no PGlite connection; knex-pglite reads `pglite` from what this returns.
    connection: (() => ({ pglite: open })) as Knex.Config['connection'],
    acquireConnectionTimeout: ACQUIRE_TIMEOUT_MS,
    ...(opts.searchPath !== undefined ? { searchPath: [opts.searchPath] } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  try {
    await knex.raw('select 1');
  } catch (err) {
    await knex.destroy().catch(() => undefined);
    throw err;
  }
  return knex;
}

/**
 * PGlite runs a statement on this thread and answers in microtasks, so a chain of statements (a request's writes,
 * then its audit entry) never let the event loop turn: I/O and everything scheduled with setImmediate waited for the
 * whole chain. A credential rotation's frames reached its subscribers only after the rotation's last statement, ~15 ms
 * later (issue 19, G6). One macrotask turn before each statement lets them through between statements.
 */
function yieldingBetweenStatements<C extends new (...args: any[]) => any>(base: C): C {
  return class extends base {
    async _query(connection: unknown, obj: unknown): Promise<unknown> {
      await new Promise<void>((resolve) => setImmediate(resolve));
      return super._query(connection, obj);
    }
  };
}

export function dbKind(knex: Knex): DbKind {
  // A transaction's client inherits from the instance's client, so this also answers for a Knex.Transaction.
  return ClientPgLite !== undefined && knex.client instanceof ClientPgLite ? 'pglite' : 'postgres';
}

/** True when the database answers a trivial query in time; never throws (it backs /readyz). */
export async function pingDb(knex: Knex): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS);
  });
  const probe = knex.raw('select 1 as ok').then(() => true, () => false);
  try {
    return await Promise.race([probe, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
