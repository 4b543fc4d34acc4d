import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * The value each credential's last rotation pushed, kept with its `rotated_at` (decision 0064): a rotate stream
 * that resumes with `Last-Event-ID` is sent the rotations it missed exactly as they were pushed, even when the stored
 * value has been replaced since without a rotation. Sealed under the rotation's own context
 * (`rotation:<org>:<kind>:<rotatedAt>`, actors/services/fleet/node-streams.ts), as on the broker.
 */
export const rotationReplayMigration: Migration = {
  name: '0045_rotation_replay',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('org_credentials', (t) => {
      t.text('rotated_sealed_value');
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('org_credentials', (t) => {
      t.dropColumn('rotated_sealed_value');
    });
  },
};
