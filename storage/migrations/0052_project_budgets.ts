import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Project budgets (issue 35 §2, decision 0080).
 * - `project_budgets`: a row while a project has a monthly or per-session limit (USD); both null removes it.
 * - `session_stop_reasons`: why the server stopped a session's run (`budget`), keyed by session and run (epoch), kept
 *   beside the session rather than in the actor's snapshot so that another reason (a superseded run) adds a value, not a field.
 * - an index on the project's sessions by last change: month-to-date spend reads only this month's sessions of one project.
 */
export const projectBudgetsMigration: Migration = {
  name: '0052_project_budgets',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('project_budgets', (t) => {
      t.uuid('project_id').primary().references('projects.id').onDelete('CASCADE');
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.double('monthly_usd');
      t.double('per_session_usd');
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.text('updated_by').notNullable();
      t.index(['org_id']);
    });
    await knex.schema.createTable('session_stop_reasons', (t) => {
      t.string('session_id', 16).notNullable();
      t.uuid('org_id').notNullable();
      t.integer('epoch').notNullable();
      t.text('reason').notNullable();
      t.timestamp('stopped_at', { useTz: true }).notNullable();
      t.primary(['session_id', 'epoch']);
    });
    await knex.schema.alterTable('sessions', (t) => {
      t.index(['org_id', 'project_id', 'updated_at'], 'sessions_project_spend_idx');
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('sessions', (t) => {
      t.dropIndex(['org_id', 'project_id', 'updated_at'], 'sessions_project_spend_idx');
    });
    await knex.schema.dropTableIfExists('session_stop_reasons');
    await knex.schema.dropTableIfExists('project_budgets');
  },
};
