import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * The tail of a session's agent output (decision 0022): the last 64 KiB its worker relayed for the session's current
 * run (`epoch`), shown in the session's detail. One row per session, rewritten by each append; a new run starts a
 * fresh tail. `total_bytes` counts everything relayed for the run, so the detail can say how much was cut.
 */
export const sessionOutputMigration: Migration = {
  name: '0032_session_output',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('session_output', (t) => {
      t.string('session_id', 16).primary();
      t.uuid('org_id').notNullable();
      t.integer('epoch').notNullable();
      t.text('tail').notNullable();
      t.bigInteger('total_bytes').notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('session_output');
  },
};
