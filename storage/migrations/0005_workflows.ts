import type { Knex } from 'knex';
import type { Migration } from './migration.js';
import { dropImmutableRowsFunction, makeRowsImmutable } from './immutable-rows.js';

/**
 * Workflows, their immutable version snapshots, runs and approval gates (issue 4; decision 0008).
 * `workflows`, `workflow_runs` and `approval_gates` are read models projected by their actors in the snapshot
 * transaction. `workflow_versions` is history: a trigger rejects UPDATE, DELETE and TRUNCATE, so nothing that
 * goes through the application role can rewrite a published version (spec 2.1: "never modified afterwards").
 * Every table carries `org_id` and every query is scoped by it.
 */
export const workflowsMigration: Migration = {
  name: '0005_workflows',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('workflows', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable();
      t.uuid('project_id').notNullable();
      t.text('name').notNullable();
      t.text('status').notNullable();
      t.integer('version').notNullable();
      // The version the execution layer starts new runs on; null while draft or archived.
      t.integer('published_version');
      t.text('created_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.index(['org_id', 'project_id']);
    });
    await knex.raw(`alter table workflows add constraint workflows_status_check check (status in ('draft','published','archived'))`);

    await knex.schema.createTable('workflow_versions', (t) => {
      t.uuid('workflow_id').notNullable();
      t.integer('version').notNullable();
      t.uuid('org_id').notNullable();
      t.text('status').notNullable();
      t.text('name').notNullable();
      t.jsonb('nodes').notNullable();
      t.jsonb('edges').notNullable();
      t.jsonb('viewport').notNullable();
      t.text('definition_yaml').notNullable();
      t.text('definition_version').notNullable();
      t.jsonb('trigger_config').notNullable();
      t.jsonb('provider_requirements').notNullable();
      t.jsonb('workflow_config').notNullable();
      t.text('schema_hash').notNullable();
      t.text('changed_by').notNullable();
      t.text('change_reason');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.primary(['workflow_id', 'version']);
      t.index(['org_id']);
    });
    await knex.raw(`alter table workflow_versions add constraint workflow_versions_positive check (version > 0)`);
    await makeRowsImmutable(knex, 'workflow_versions');

    await knex.schema.createTable('workflow_runs', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable();
      t.uuid('project_id').notNullable();
      t.uuid('workflow_id').notNullable();
      t.integer('version').notNullable();
      t.text('status').notNullable();
      t.jsonb('steps').notNullable();
      t.text('error');
      t.text('started_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.index(['org_id', 'workflow_id']);
      t.index(['status']);
    });

    await knex.schema.createTable('approval_gates', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable();
      t.uuid('project_id');
      t.text('title').notNullable();
      t.text('issue');
      t.text('session_id');
      t.uuid('run_id');
      t.text('node_id');
      t.text('escalation');
      t.text('required_role');
      t.text('status').notNullable();
      t.text('decision');
      t.jsonb('decided_by');
      t.text('driver');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('decided_at', { useTz: true });
      t.index(['org_id', 'created_at']);
      t.index(['org_id', 'issue']);
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('approval_gates');
    await knex.schema.dropTableIfExists('workflow_runs');
    await knex.schema.dropTableIfExists('workflow_versions');
    await dropImmutableRowsFunction(knex, 'workflow_versions');
    await knex.schema.dropTableIfExists('workflows');
  },
};
