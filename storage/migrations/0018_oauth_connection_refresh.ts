import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Refreshing integration OAuth tokens (decision 0018). The expiry (`expires_at`) and the refresh token (inside
 * `sealed_tokens`) were already kept; what was missing:
 * - `token_version`: bumped by every write of new tokens (a connection, a refresh). A refresh writes only if the
 *   version is still the one it read, so two nodes refreshing at once cannot overwrite each other's rotated
 *   refresh token; the loser adopts the stored tokens.
 * - `status`: `connected`, or `reauthorization_required` once the provider refused the refresh token (or there was
 *   none to use). Lookups stop calling the provider until a user connects again, which sets it back;
 *   `status_changed_at` says since when.
 * - `refreshed_at`: when the tokens were last refreshed; `updated_at` stays the time a user last connected.
 */
export const oauthConnectionRefreshMigration: Migration = {
  name: '0018_oauth_connection_refresh',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('integration_oauth_connections', (t) => {
      t.integer('token_version').notNullable().defaultTo(0);
      t.text('status').notNullable().defaultTo('connected');
      t.timestamp('status_changed_at', { useTz: true });
      t.timestamp('refreshed_at', { useTz: true });
    });
    await knex.raw(`alter table integration_oauth_connections add constraint integration_oauth_connections_status_check
      check (status in ('connected', 'reauthorization_required'))`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.raw('alter table integration_oauth_connections drop constraint if exists integration_oauth_connections_status_check');
    await knex.schema.alterTable('integration_oauth_connections', (t) => {
      t.dropColumn('token_version');
      t.dropColumn('status');
      t.dropColumn('status_changed_at');
      t.dropColumn('refreshed_at');
    });
  },
};
