import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * What workers report about a run beyond its status (issue 34, decision 0076), and the pull requests runs owe.
 *
 * - `session_run_reports`: per session run (`session_id` is the session's key, `epoch` its run), the latest `agent`,
 *   `usage` and `workspace` its worker reported with a status. Facts about the run, kept out of the session actor's
 *   state: each member is replaced by a newer report, a member not sent keeps what was reported before.
 * - `session_pull_requests`: the pull-request outbox. One row per completed run whose workspace pushed commits
 *   (key `<session key>:<epoch>:pull-request`), written after the transition was accepted: `pending` until the
 *   sender opened (or found) the pull request (`opened`, with its number and URL) or gave up (`failed`, with the
 *   reason); `skipped`, with the reason, when no pull request applies (no GitHub connection, not a GitHub repository).
 */
export const sessionRunReportsMigration: Migration = {
  name: '0049_session_run_reports',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('session_run_reports', (t) => {
      t.string('session_id', 16).notNullable();
      t.uuid('org_id').notNullable();
      t.integer('epoch').notNullable();
      t.jsonb('agent');
      t.jsonb('usage');
      t.jsonb('workspace');
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.primary(['session_id', 'epoch']);
    });

    await knex.schema.createTable('session_pull_requests', (t) => {
      t.text('id').primary();
      t.uuid('org_id').notNullable();
      t.string('session_id', 16).notNullable();
      t.integer('epoch').notNullable();
      t.text('status').notNullable();
      /** `owner/repo` on GitHub; null when skipped before a repository was known. */
      t.text('repository');
      t.text('head');
      t.text('base');
      t.text('title');
      t.text('body');
      t.integer('attempts').notNullable().defaultTo(0);
      t.timestamp('next_attempt_at', { useTz: true }).notNullable();
      t.timestamp('claimed_until', { useTz: true });
      t.text('last_error');
      t.integer('number');
      t.text('url');
      t.timestamp('opened_at', { useTz: true });
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.unique(['session_id', 'epoch']);
      t.index(['org_id', 'session_id']);
    });
    await knex.raw(`alter table session_pull_requests add constraint session_pull_requests_status_check
      check (status in ('pending','opened','failed','skipped'))`);
    await knex.raw(`create index session_pull_requests_due on session_pull_requests (next_attempt_at) where status = 'pending'`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('session_pull_requests');
    await knex.schema.dropTableIfExists('session_run_reports');
  },
};
