import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import type { Knex } from 'knex';
import { createDb } from '../../storage/db.js';
import { migrate } from '../../storage/migrations/runner.js';
import { engines, skipEngine } from './engines.js';

/**
 * Fresh, migrated databases for tests, on either engine:
 *
 *   let db: TestDb;
 *   before(async () => { db = await withPgliteDb(); });
 *   after(() => db.drop());
 *
 * `withPostgresSchema` isolates a test file in its own schema on the real Postgres and drops it afterwards.
 * `dbEngines` lists both so a suite can run once per engine (skipping Postgres when TEST_SKIP_POSTGRES=1).
 * To tamper with audit rows in a test, first `ALTER TABLE audit_log DISABLE TRIGGER USER` (see migration 0002).
 */
export interface TestDb {
  readonly knex: Knex;
  readonly kind: 'pglite' | 'postgres';
  /** The isolating schema on Postgres; `public` on in-memory PGlite. */
  readonly schema: string;
  /** Opens another knex on the same database and schema (a second node, or a connection to kill). */
  reopen(): Promise<Knex>;
  drop(): Promise<void>;
}

/**
 * A fresh PGlite runs initdb, which takes seconds; loading a dump of an already-migrated one takes about a
 * second. So the first call in a process builds that template and every call clones it.
 */
let template: Promise<Blob> | undefined;

function migratedTemplate(): Promise<Blob> {
  template ??= (async () => {
    const pglite = new PGlite();
    const knex = await createDb({ pglite });
    try {
      await migrate(knex);
      return await pglite.dumpDataDir('none');
    } finally {
      await knex.destroy();
    }
  })();
  return template;
}

/** A new in-memory PGlite holding the migrated schema, for tests that build their own knex with createDb. */
export async function newMigratedPglite(): Promise<PGlite> {
  return new PGlite({ loadDataDir: await migratedTemplate() });
}

/** Fresh migrated in-memory PGlite. The first call in a process may take tens of seconds on a busy machine. */
export async function withPgliteDb(): Promise<TestDb> {
  const knex = await createDb({ pglite: await newMigratedPglite() });
  // A no-op on the template, and a safety net if a migration was added to the list after the template was built.
  await migrate(knex);
  return {
    knex,
    kind: 'pglite',
    schema: 'public',
    reopen: () => Promise.reject(new Error('an in-memory PGlite database cannot be opened twice')),
    drop: () => knex.destroy(),
  };
}

export async function withPostgresSchema(label = 'test'): Promise<TestDb> {
  const schema = `t_${label.replace(/[^a-z0-9]/gi, '_').slice(0, 30)}_${randomBytes(5).toString('hex')}`.toLowerCase();
  const open = () => createDb({ databaseUrl: engines.postgres, searchPath: schema, poolMax: 10 });
  const knex = await open();
  await migrate(knex);
  const extra: Knex[] = [];
  return {
    knex,
    kind: 'postgres',
    schema,
    async reopen() {
      const another = await open();
      extra.push(another);
      return another;
    },
    async drop() {
      await Promise.all(extra.map((k) => k.destroy()));
      try {
        await knex.raw(`drop schema if exists "${schema}" cascade`);
      } finally {
        await knex.destroy();
      }
    },
  };
}

export interface DbEngine {
  readonly name: 'pglite' | 'postgres';
  readonly skip: boolean;
  open(label?: string): Promise<TestDb>;
}

export const dbEngines: readonly DbEngine[] = [
  { name: 'pglite', skip: false, open: () => withPgliteDb() },
  { name: 'postgres', skip: skipEngine.postgres, open: (label) => withPostgresSchema(label) },
];
