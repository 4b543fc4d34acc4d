import type { Knex } from 'knex';
import type { Migration } from './migration.js';

const FIRE_OUTCOMES_BEFORE = `'starting','started','skipped-overlap','skipped-missed','failed'`;

/**
 * Pausing queues, schedules and workers (issue 36, decision 0079).
 * - `project_queue_pauses`: a row while a project's queue is paused: its pending sessions are offered to no worker.
 * - `worker_pauses`: a row while a worker is paused: it is offered no session. Removed with its worker.
 * - `workflow_schedules.paused_at|paused_by`: the schedule actor's projection of its pause; a fire due while paused is
 *   recorded with the new outcome `skipped-paused`.
 * A row rather than a column on `projects` or `daemon_workers`: the offer query asks "is there a pause" with an
 * anti-join on a table that is nearly always empty, and the liveness writer's HOT updates of `daemon_workers` stay HOT.
 */
export const queueControlMigration: Migration = {
  name: '0050_queue_control',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('project_queue_pauses', (t) => {
      t.uuid('project_id').primary().references('projects.id').onDelete('CASCADE');
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.timestamp('paused_at', { useTz: true }).notNullable();
      t.text('paused_by').notNullable();
      t.index(['org_id']);
    });
    await knex.schema.createTable('worker_pauses', (t) => {
      t.text('worker_id').primary().references('daemon_workers.id').onDelete('CASCADE');
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.timestamp('paused_at', { useTz: true }).notNullable();
      t.text('paused_by').notNullable();
      t.index(['org_id']);
    });
    await knex.schema.alterTable('workflow_schedules', (t) => {
      t.timestamp('paused_at', { useTz: true });
      t.text('paused_by');
    });
    await knex.raw('alter table workflow_schedule_fires drop constraint workflow_schedule_fires_outcome_check');
    await knex.raw(`alter table workflow_schedule_fires add constraint workflow_schedule_fires_outcome_check
      check (outcome in (${FIRE_OUTCOMES_BEFORE},'skipped-paused'))`);
  },

  async down(knex: Knex): Promise<void> {
    await knex('workflow_schedule_fires').where({ outcome: 'skipped-paused' }).update({ outcome: 'skipped-missed' });
    await knex.raw('alter table workflow_schedule_fires drop constraint workflow_schedule_fires_outcome_check');
    await knex.raw(`alter table workflow_schedule_fires add constraint workflow_schedule_fires_outcome_check check (outcome in (${FIRE_OUTCOMES_BEFORE}))`);
    await knex.schema.alterTable('workflow_schedules', (t) => {
      t.dropColumn('paused_at');
      t.dropColumn('paused_by');
    });
    await knex.schema.dropTableIfExists('worker_pauses');
    await knex.schema.dropTableIfExists('project_queue_pauses');
  },
};
