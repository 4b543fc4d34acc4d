import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Agent output relayed exactly once (issue 35 §4, decision 0090). A worker's relay numbers the chunks it sends for one
 * claim of a session (`relay`, `firstChunk`); the kept tail records which relay it last heard and how many of its
 * chunks it holds, so a retried batch adds to neither the tail nor the transcript what the first try already added.
 * `repeat_chunks` is how many chunks at the start of the last batch were repeats: the statement that writes the tail
 * hands it to the transcript insert of the same statement.
 */
export const outputRelayOnceMigration: Migration = {
  name: '0057_output_relay_once',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('session_output', (t) => {
      t.text('relay_id');
      t.bigInteger('relay_chunks').notNullable().defaultTo(0);
      t.integer('repeat_chunks').notNullable().defaultTo(0);
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('session_output', (t) => {
      t.dropColumn('relay_id');
      t.dropColumn('relay_chunks');
      t.dropColumn('repeat_chunks');
    });
  },
};
