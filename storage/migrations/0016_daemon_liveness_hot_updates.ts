import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * The batched liveness writer (decision 0007, PERFORMANCE.md G3b) rewrites `daemon_workers.last_seen_at` of every
 * live worker every few seconds. An index on that column made each of those updates write every index of the table
 * (a new tuple that no index may skip), about three index insertions per heartbeat row. Nothing reads through it:
 * the lease sweep reaches workers from their sessions by primary key, fleet statistics and the palette scan a
 * worker's org by `org_id`. Dropped, and with free room left on each page (fillfactor 70) the update becomes a
 * heap-only (HOT) update that touches no index at all. The fillfactor applies to pages written from now on.
 */
export const daemonLivenessHotUpdatesMigration: Migration = {
  name: '0016_daemon_liveness_hot_updates',

  async up(knex: Knex): Promise<void> {
    await knex.raw('drop index if exists daemon_workers_last_seen_at_index');
    await knex.raw('alter table daemon_workers set (fillfactor = 70)');
  },

  async down(knex: Knex): Promise<void> {
    await knex.raw('alter table daemon_workers reset (fillfactor)');
    await knex.raw('create index if not exists daemon_workers_last_seen_at_index on daemon_workers (last_seen_at)');
  },
};
