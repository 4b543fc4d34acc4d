import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * User tokens ended by logout (decision 0006). A row lives only as long as the token it revokes could still verify:
 * `expires_at` is the token's own `exp`, and rows past it are pruned on the next logout. `org_id` and `user_id`
 * say whose session it was; the authenticator looks rows up by `jti` alone.
 */
export const revokedUserTokensMigration: Migration = {
  name: '0017_revoked_user_tokens',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('revoked_user_tokens', (t) => {
      t.text('jti').primary();
      t.uuid('org_id').notNullable();
      t.uuid('user_id').notNullable();
      t.timestamp('revoked_at', { useTz: true }).notNullable();
      t.timestamp('expires_at', { useTz: true }).notNullable();
      t.index(['expires_at']);
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('revoked_user_tokens');
  },
};
