import { suspendQueryDeadline } from '../query-deadline.js';
import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import { withStorageErrors } from '../storage-errors.js';
import { migrations, type Migration } from './index.js';

/**
 * Applies every migration from the static list that the database has not seen yet and returns their names
 * (empty when already up to date). knex records applied names in `knex_migrations` and serialises concurrent
 * runners with `knex_migrations_lock`; a node that finds the lock held waits for the other node to finish.
 */
const source: Knex.MigrationSource<Migration> = {
  getMigrations: async () => [...migrations],
  getMigrationName: (migration) => migration.name,
  getMigration: async (migration) => ({ up: (knex: Knex) => migration.up(knex), down: (knex: Knex) => migration.down(knex) }),
};

const LOCK_RETRY_MS = 250;
const LOCK_WAIT_LIMIT_MS = 30_000;

export async function migrate(knex: Knex): Promise<string[]> {
  // A migration may take longer than any request's query should (an index on a large table, a lock another runner
  // holds): the query deadline (storage/query-deadline.ts) is lifted while they run, for every caller.
  return suspendQueryDeadline(knex, () => migrateLatest(knex));
}

async function migrateLatest(knex: Knex): Promise<string[]> {
  const started = Date.now();
  for (;;) {
    try {
      const [, applied] = (await withStorageErrors(() => knex.migrate.latest({ migrationSource: source }))) as [number, string[]];
      return applied;
    } catch (err) {
      const locked = err instanceof Error && err.name === 'MigrationLocked';
      if (!locked) throw err;
      if (Date.now() - started > LOCK_WAIT_LIMIT_MS) {
        throw new TroupeError('STORAGE_UNAVAILABLE', 'migrations are locked by another runner (knex_migrations_lock)');
      }
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
    }
  }
}

/** Names already applied, oldest first (for `troupe migrate` and diagnostics). */
export async function appliedMigrations(knex: Knex): Promise<string[]> {
  const [done] = (await withStorageErrors(() => knex.migrate.list({ migrationSource: source }))) as [Array<{ name: string }>, unknown[]];
  return done.map((row) => row.name);
}
