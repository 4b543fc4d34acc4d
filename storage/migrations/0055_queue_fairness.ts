import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Fair offers across an org's projects (issue 36, decision 0085).
 * - `project_queue_turns`: a project's weight (1–100, 1 with no row) and where it stands in the offer rounds: when it
 *   last finished a turn (`turn_at`, null: never) and how many of its `weight` offers its current turn has used. The
 *   poll reads it for the projects it considers and writes it for those it offered something: no write on the claim
 *   or dispatch paths.
 * - `sessions_pending_project_priority`: each project's pending sessions in offer order (highest priority first, FIFO
 *   within one), so a poll reads the head of every project's queue by one index descent each, however long any one
 *   queue is; the org-led index of migration 0051 gives one order across projects, which a burst in one project owns.
 */
export const queueFairnessMigration: Migration = {
  name: '0055_queue_fairness',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('project_queue_turns', (t) => {
      t.uuid('project_id').primary().references('projects.id').onDelete('CASCADE');
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.smallint('weight').notNullable().defaultTo(1);
      t.timestamp('turn_at', { useTz: true });
      t.integer('turn_used').notNullable().defaultTo(0);
      t.timestamp('weight_updated_at', { useTz: true });
      t.text('weight_updated_by');
      t.index(['org_id']);
    });
    await knex.raw(`alter table project_queue_turns add constraint project_queue_turns_valid
      check (weight between 1 and 100 and turn_used >= 0 and turn_used < weight)`);
    await knex.raw(`create index sessions_pending_project_priority on sessions (project_id, priority desc, created_at, id) where status = 'pending'`);
    // Analyzed while empty, as migration 0051 does for the other tables the poll joins: never analyzed, the planner
    // guesses ten pages of rows and prices the poll as a read of every pending session.
    await knex.raw('analyze project_queue_turns');
  },

  async down(knex: Knex): Promise<void> {
    await knex.raw('drop index if exists sessions_pending_project_priority');
    await knex.schema.dropTableIfExists('project_queue_turns');
  },
};
