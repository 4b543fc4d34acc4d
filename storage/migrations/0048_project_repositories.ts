import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Repositories a project's sessions run on (issue 34, decision 0075), and what a session was dispatched with.
 * - `project_repositories`: one row per registered repository; name and URL are each unique within the project.
 * - `sessions.repository_*`: the repository as it was when the session was dispatched (a copy, so a follow-up after
 *   the repository is removed or edited still reaches the same origin); `ref` is the branch, tag or commit it starts
 *   from (the default branch when the dispatch named none); `agent_preset` the agent the dispatch asked for, if any.
 * - `sessions_pending_follow_ups`: the pending follow-ups (run 2 and on) by the worker that ran them.
 */
export const projectRepositoriesMigration: Migration = {
  name: '0048_project_repositories',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('project_repositories', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.text('url').notNullable();
      t.text('default_branch').notNullable();
      t.text('created_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.unique(['project_id', 'name']);
      t.unique(['project_id', 'url']);
      t.index(['org_id', 'project_id', 'created_at']);
    });
    await knex.schema.alterTable('sessions', (t) => {
      t.uuid('repository_id');
      t.text('repository_url');
      t.text('repository_name');
      t.text('repository_default_branch');
      t.text('ref');
      t.text('agent_preset');
    });
    // A worker's poll looks for its own follow-ups first (decision 0075): few rows, found without scanning the queue.
    await knex.raw(`create index sessions_pending_follow_ups on sessions (last_worker_id, created_at) where status = 'pending' and epoch > 1`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.raw('drop index if exists sessions_pending_follow_ups');
    await knex.schema.alterTable('sessions', (t) => {
      for (const c of ['repository_id', 'repository_url', 'repository_name', 'repository_default_branch', 'ref', 'agent_preset']) t.dropColumn(c);
    });
    await knex.schema.dropTable('project_repositories');
  },
};
