import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Priorities and concurrency keys (issue 36, decision 0081).
 * - `sessions.priority` (0–9, 5 by default) and `sessions.concurrency_key` (null: none), written once at dispatch.
 * - `sessions_pending_priority`: the poll's order (highest priority first, FIFO within one) over the org's pending
 *   sessions only, so it stays as small as the queue however many sessions have ended. Not by project: a worker serves
 *   a list of projects, and an index led by the project gives no order across a list, so the poll would sort every
 *   pending session of its projects; read in this order, it stops at the first few it may take (decision 0081).
 * - `sessions_concurrency_held`: how many sessions of a key hold a claim, the probe the poll makes per candidate.
 * - `project_concurrency`: a project's limit per key and what happens past it; no row, no limit.
 */
export const sessionPriorityConcurrencyMigration: Migration = {
  name: '0051_session_priority_concurrency',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('sessions', (t) => {
      t.smallint('priority').notNullable().defaultTo(5);
      t.text('concurrency_key');
    });
    await knex.raw(`alter table sessions add constraint sessions_priority_range check (priority between 0 and 9)`);
    await knex.raw(`create index sessions_pending_priority on sessions (org_id, priority desc, created_at, id) where status = 'pending'`);
    await knex.raw(`create index sessions_concurrency_held on sessions (org_id, concurrency_key)
      where concurrency_key is not null and status in ('claimed','running','paused','finalizing')`);
    await knex.schema.createTable('project_concurrency', (t) => {
      t.uuid('project_id').primary().references('projects.id').onDelete('CASCADE');
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.integer('default_limit').notNullable();
      t.text('strategy').notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.text('updated_by').notNullable();
      t.index(['org_id']);
    });
    await knex.raw(`alter table project_concurrency add constraint project_concurrency_valid
      check (default_limit >= 1 and strategy in ('queue','cancel-newest','cancel-in-progress'))`);
    // The poll anti-joins these nearly always empty tables. Never analyzed, the planner takes each for ten pages of
    // rows, expects the joins to remove nearly every pending session, prices the poll's LIMIT as a read of them all and
    // JIT-compiles it: 2 s a poll with 100,000 pending. Analyzed empty, it reads the priority index and stops (0.2 ms).
    for (const table of ['project_concurrency', 'project_queue_pauses', 'worker_pauses']) await knex.raw(`analyze ${table}`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('project_concurrency');
    await knex.raw('drop index if exists sessions_concurrency_held');
    await knex.raw('drop index if exists sessions_pending_priority');
    await knex.raw('alter table sessions drop constraint if exists sessions_priority_range');
    await knex.schema.alterTable('sessions', (t) => {
      t.dropColumn('priority');
      t.dropColumn('concurrency_key');
    });
  },
};
