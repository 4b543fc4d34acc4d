import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Triggers that start runs by themselves (issue 17; decision 0027).
 * - `workflow_runs` learns how each run started: `trigger_kind` (`manual`, `schedule`, `webhook`), the schedule's
 *   `fire_time`, the webhook delivery (`trigger_ref`), and the run's `input`.
 * - `workflow_triggers`: what the execution layer is deployed with, one row per workflow, written by the workflow
 *   actor with every version: the trigger of the current version and the version runs start on (null unless
 *   published). Webhook deliveries are matched against it; schedules converge to it.
 * - `workflow_schedules`: each schedule actor's projection (next fire, the fire whose run is being started).
 * - `workflow_schedule_fires`: one row per fire, keyed by (workflow, fire time): a second run for one fire could not
 *   even be recorded.
 */
export const workflowTriggersMigration: Migration = {
  name: '0040_workflow_triggers',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('workflow_runs', (t) => {
      t.text('trigger_kind').notNullable().defaultTo('manual');
      t.timestamp('fire_time', { useTz: true });
      t.text('trigger_ref');
      t.jsonb('input').notNullable().defaultTo('{}');
    });
    await knex.raw(`alter table workflow_runs add constraint workflow_runs_trigger_kind_check check (trigger_kind in ('manual','schedule','webhook'))`);

    await knex.schema.createTable('workflow_triggers', (t) => {
      t.uuid('workflow_id').primary();
      t.uuid('org_id').notNullable();
      t.uuid('project_id').notNullable();
      t.integer('workflow_version').notNullable();
      t.integer('published_version');
      t.text('kind').notNullable();
      t.jsonb('trigger').notNullable();
      t.text('provider');
      t.text('event');
      t.timestamp('updated_at', { useTz: true }).notNullable();
    });
    await knex.raw(`create index workflow_triggers_webhook on workflow_triggers (org_id, provider, updated_at) where kind = 'webhook' and published_version is not null`);
    await knex.raw(`create index workflow_triggers_schedule on workflow_triggers (workflow_id) where kind = 'schedule'`);

    await knex.schema.createTable('workflow_schedules', (t) => {
      t.uuid('workflow_id').primary();
      t.uuid('org_id').notNullable();
      t.uuid('project_id').notNullable();
      t.integer('applied_version').notNullable();
      t.text('status').notNullable();
      t.integer('version');
      t.text('cron');
      t.text('timezone');
      t.text('overlap');
      t.integer('catchup_window_seconds');
      t.timestamp('next_fire_at', { useTz: true });
      t.timestamp('pending_fire_at', { useTz: true });
      t.uuid('last_run_id');
      t.timestamp('updated_at', { useTz: true }).notNullable();
    });
    await knex.raw(`alter table workflow_schedules add constraint workflow_schedules_status_check check (status in ('active','ended'))`);
    await knex.raw(`create index workflow_schedules_due on workflow_schedules (next_fire_at) where status = 'active'`);
    await knex.raw(`create index workflow_schedules_pending on workflow_schedules (updated_at) where pending_fire_at is not null`);

    await knex.schema.createTable('workflow_schedule_fires', (t) => {
      t.uuid('workflow_id').notNullable();
      t.timestamp('fire_time', { useTz: true }).notNullable();
      t.uuid('org_id').notNullable();
      t.integer('version').notNullable();
      t.text('outcome').notNullable();
      t.uuid('run_id');
      t.text('detail');
      t.timestamp('recorded_at', { useTz: true }).notNullable();
      t.primary(['workflow_id', 'fire_time']);
    });
    await knex.raw(`alter table workflow_schedule_fires add constraint workflow_schedule_fires_outcome_check check (outcome in ('starting','started','skipped-overlap','skipped-missed','failed'))`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTable('workflow_schedule_fires');
    await knex.schema.dropTable('workflow_schedules');
    await knex.schema.dropTable('workflow_triggers');
    await knex.raw('alter table workflow_runs drop constraint workflow_runs_trigger_kind_check');
    await knex.schema.alterTable('workflow_runs', (t) => {
      t.dropColumn('input');
      t.dropColumn('trigger_ref');
      t.dropColumn('fire_time');
      t.dropColumn('trigger_kind');
    });
  },
};
