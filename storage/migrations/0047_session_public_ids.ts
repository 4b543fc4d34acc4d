import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Sessions get the public id of spec 2.7 beside their key (decision 0068): `id` stays the key every other table
 * and the actor use; `public_id` is SHA-256(trackerSessionId), 16 hex characters, filled here for the sessions that
 * exist. Not unique per org: an org may hold an older session under the same tracker id (made before tracker ids were
 * org-scoped), and a lookup then prefers the session whose key is the name asked for.
 */
export const sessionPublicIdsMigration: Migration = {
  name: '0047_session_public_ids',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('sessions', (t) => {
      t.string('public_id', 16);
    });
    await knex.raw(`update sessions set public_id = substr(encode(sha256(convert_to(tracker_session_id, 'UTF8')), 'hex'), 1, 16)`);
    await knex.schema.alterTable('sessions', (t) => {
      t.string('public_id', 16).notNullable().alter();
      t.index(['org_id', 'public_id']);
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('sessions', (t) => {
      t.dropIndex(['org_id', 'public_id']);
      t.dropColumn('public_id');
    });
  },
};
