import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * The provider's own account ids an org registers with an integration (decision 0070), so a delivery without
 * `?org=` is routed by the account it names: a GitHub hook's installation target id or repository owner, a Linear
 * organizationId, a CircleCI organization id, a Vercel team (or user) id. An id is unique per (org, provider); the
 * same id may be claimed by a few orgs (at most five, checked at registration), each verified with its own secret.
 * Looked up by (provider, account id) before any signature work; ids are stored lower-cased.
 */
export const providerAccountIdsMigration: Migration = {
  name: '0046_provider_account_ids',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('provider_integration_accounts', (t) => {
      t.uuid('org_id').notNullable();
      t.text('provider').notNullable();
      t.text('account_id').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.primary(['org_id', 'provider', 'account_id']);
      t.foreign(['org_id', 'provider']).references(['org_id', 'provider']).inTable('provider_integrations').onDelete('CASCADE');
      t.index(['provider', 'account_id'], 'provider_integration_accounts_by_account');
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTable('provider_integration_accounts');
  },
};
