import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Session ids are org-scoped (issue 16): a dispatch that names a tracker session id first looks for the org's session
 * with that id, so sessions made before keep answering for it. This index makes that lookup one probe.
 */
export const sessionsByTrackerIdMigration: Migration = {
  name: '0037_sessions_by_tracker_id',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('sessions', (t) => t.index(['org_id', 'tracker_session_id'], 'sessions_org_tracker_session'));
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('sessions', (t) => t.dropIndex(['org_id', 'tracker_session_id'], 'sessions_org_tracker_session'));
  },
};
