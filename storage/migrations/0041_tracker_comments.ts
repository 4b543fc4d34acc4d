import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * The tracker outbox (issue 17; decision 0028): one row per terminal transition (or stop) of a session started from
 * a Linear or GitHub issue whose org is connected to that tracker, written by the session's projection in the
 * transition's own transaction under the transition's key, so a transition has its comment exactly once or not at
 * all. The sender claims due rows (`claimed_until`), posts, and records `sent` or, on a 4xx or too many failures,
 * `failed` with the reason; a 5xx or an unreachable tracker waits `next_attempt_at`.
 */
export const trackerCommentsMigration: Migration = {
  name: '0041_tracker_comments',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('tracker_comments', (t) => {
      t.text('id').primary();
      t.uuid('org_id').notNullable();
      t.string('session_id', 16).notNullable();
      t.integer('epoch').notNullable();
      t.text('tracker').notNullable();
      t.text('issue').notNullable();
      t.text('kind').notNullable();
      t.text('session_status').notNullable();
      t.double('cost_usd').notNullable();
      t.bigInteger('duration_ms');
      t.text('status').notNullable();
      t.integer('attempts').notNullable().defaultTo(0);
      t.timestamp('next_attempt_at', { useTz: true }).notNullable();
      t.timestamp('claimed_until', { useTz: true });
      t.text('last_error');
      t.text('comment_url');
      t.timestamp('sent_at', { useTz: true });
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.index(['org_id', 'session_id']);
    });
    await knex.raw(`alter table tracker_comments add constraint tracker_comments_status_check check (status in ('pending','sent','failed'))`);
    await knex.raw(`alter table tracker_comments add constraint tracker_comments_tracker_check check (tracker in ('linear','github'))`);
    await knex.raw(`create index tracker_comments_due on tracker_comments (next_attempt_at) where status = 'pending'`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTable('tracker_comments');
  },
};
