import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Integration OAuth, and re-driving stuck provider deliveries.
 * - `integration_oauth_states`: one row per authorization under way. The key is the SHA-256 of the `state` the
 *   browser carries (a database reader cannot finish someone's flow); the row binds it to org, user and provider,
 *   keeps the PKCE verifier sealed with the master key and the redirect URI the token request must repeat, and is
 *   deleted by the callback that uses it (single use). Rows past `expires_at` are useless and pruned on insert.
 * - `integration_oauth_connections`: one per (org, provider); the token response sealed with the master key
 *   (context `<orgId>:oauth:<provider>`), with the granted scopes and expiry readable without opening it.
 * - `provider_webhook_events.route_message`: the actor message a delivery was handed on with, kept so a delivery
 *   whose hand-off or routing never finished can be sent again; `resend_count`/`last_resent_at` bound that.
 */
export const integrationOAuthMigration: Migration = {
  name: '0013_integration_oauth',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('integration_oauth_states', (t) => {
      t.text('state_hash').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('user_id').notNullable();
      t.text('provider').notNullable();
      t.text('sealed_verifier').notNullable();
      t.text('redirect_uri').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('expires_at', { useTz: true }).notNullable();
      t.index(['expires_at']);
    });

    await knex.schema.createTable('integration_oauth_connections', (t) => {
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('provider').notNullable();
      t.text('sealed_tokens').notNullable();
      t.text('scope');
      t.timestamp('expires_at', { useTz: true });
      t.uuid('connected_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.primary(['org_id', 'provider']);
    });

    await knex.schema.alterTable('provider_webhook_events', (t) => {
      t.jsonb('route_message');
      t.integer('resend_count').notNullable().defaultTo(0);
      t.timestamp('last_resent_at', { useTz: true });
    });
    await knex.raw(`create index provider_webhook_events_received_idx on provider_webhook_events (received_at) where status = 'received'`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.raw('drop index if exists provider_webhook_events_received_idx');
    await knex.schema.alterTable('provider_webhook_events', (t) => {
      t.dropColumn('route_message');
      t.dropColumn('resend_count');
      t.dropColumn('last_resent_at');
    });
    await knex.schema.dropTableIfExists('integration_oauth_connections');
    await knex.schema.dropTableIfExists('integration_oauth_states');
  },
};
