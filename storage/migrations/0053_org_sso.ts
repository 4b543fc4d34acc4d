import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Single sign-on per org with OpenID Connect (issue 37 §1, decision 0083).
 * - `org_sso`: one row per org that signs its people in at its own provider: issuer, client id, the client secret
 *   sealed with the master key (context `<orgId>:sso:client-secret`), the groups claim, the group → role map, the
 *   role of a person no group maps, and whether password sign-in is refused for its domains.
 * - `org_sso_domains`: the email domains that route a sign-in to that org's provider. The domain is the key, so one
 *   domain belongs to at most one org (a second org claiming it is a 409).
 * - `oidc_login_states`: one row per sign-in under way, keyed by the SHA-256 of its `state`, bound to the browser
 *   that started it by the SHA-256 of a cookie it holds; the PKCE verifier and the nonce are sealed. The callback
 *   deletes the row it uses (single use); rows past `expires_at` are pruned on insert.
 */
export const orgSsoMigration: Migration = {
  name: '0053_org_sso',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('org_sso', (t) => {
      t.uuid('org_id').primary().references('orgs.id').onDelete('CASCADE');
      t.text('issuer').notNullable();
      t.text('client_id').notNullable();
      t.text('sealed_client_secret').notNullable();
      t.text('groups_claim').notNullable();
      t.jsonb('role_map').notNullable();
      t.text('default_role');
      t.boolean('enforce').notNullable().defaultTo(false);
      t.text('updated_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
    });
    await knex.schema.createTable('org_sso_domains', (t) => {
      t.text('domain').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.index(['org_id']);
    });
    await knex.schema.createTable('oidc_login_states', (t) => {
      t.text('state_hash').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('browser_hash').notNullable();
      t.text('sealed_checks').notNullable();
      t.text('redirect_uri').notNullable();
      t.text('next_path').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('expires_at', { useTz: true }).notNullable();
      t.index(['expires_at']);
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('oidc_login_states');
    await knex.schema.dropTableIfExists('org_sso_domains');
    await knex.schema.dropTableIfExists('org_sso');
  },
};
