import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Every status a session moved through, for its timeline in the console (decision 0030). Written by the session
 * actor's projection in its snapshot transaction; the id is the change's own (time, run, status), so a replayed
 * projection inserts nothing twice. The list of sessions pages by (created_at, id) within an org.
 */
export const sessionTransitionsMigration: Migration = {
  name: '0030_session_transitions',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('session_transitions', (t) => {
      t.text('id').primary();
      t.string('session_id', 16).notNullable();
      t.uuid('org_id').notNullable();
      t.integer('epoch').notNullable();
      t.text('from_status').notNullable();
      t.text('to_status').notNullable();
      t.text('worker_id');
      t.timestamp('at', { useTz: true }).notNullable();
      t.index(['session_id', 'at']);
    });
    await knex.schema.alterTable('sessions', (t) => {
      t.index(['org_id', 'created_at', 'id'], 'sessions_org_created_idx');
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('sessions', (t) => t.dropIndex(['org_id', 'created_at', 'id'], 'sessions_org_created_idx'));
    await knex.schema.dropTableIfExists('session_transitions');
  },
};
