import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Every node reconciles its pending-mutation index from `daemon_mutations` every ~30 s (decision 0007): one grouped
 * query over the pending rows only. This partial index keeps that query proportional to what is pending, not to the
 * whole delivery history, which only grows.
 */
export const pendingMutationsIndexMigration: Migration = {
  name: '0015_pending_mutations_index',

  async up(knex: Knex): Promise<void> {
    await knex.raw(`create index if not exists daemon_mutations_pending_by_worker on daemon_mutations (worker_host_id) where status = 'pending'`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.raw('drop index if exists daemon_mutations_pending_by_worker');
  },
};
