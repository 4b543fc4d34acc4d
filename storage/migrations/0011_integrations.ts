import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Integrations (decision 0014): provider webhooks, signed-dispatch requesters, machine clients.
 * - `provider_integrations`: one row per (org, provider). `sealed_secret` is the provider's webhook signing secret
 *   sealed with the master key (context `<orgId>:webhook:<provider>`); `project_id` is where events that start work
 *   (a Linear issue) dispatch sessions, null meaning the org's oldest project.
 * - `provider_webhook_events`: every accepted delivery, keyed by the provider's own delivery id within the org, so a
 *   repeat answers `duplicate: true`. Written before the 200; the `provider-event/<id>` actor records the outcome.
 * - `requesters`: signed agent-dispatch registrations; `public_key` is the raw 32-byte Ed25519 key, standard base64.
 * - `m2m_clients` / `m2m_client_secrets`: OAuth client_credentials clients. Secrets are SHA-256 hashes (they are
 *   high-entropy, minted by us); several rows per client let an old secret overlap a new one during rotation.
 */
export const integrationsMigration: Migration = {
  name: '0011_integrations',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('provider_integrations', (t) => {
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('provider').notNullable();
      t.text('sealed_secret').notNullable();
      t.uuid('project_id');
      t.text('updated_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.primary(['org_id', 'provider']);
      t.index(['provider']);
    });

    await knex.schema.createTable('provider_webhook_events', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('provider').notNullable();
      t.text('delivery_id').notNullable();
      t.text('event_type').notNullable();
      t.text('correlation_id').notNullable();
      t.text('status').notNullable();
      t.jsonb('outcome').notNullable().defaultTo('{}');
      t.text('session_id');
      t.timestamp('received_at', { useTz: true }).notNullable();
      t.timestamp('routed_at', { useTz: true });
      t.unique(['org_id', 'provider', 'delivery_id']);
      t.index(['org_id', 'received_at']);
    });
    await knex.raw(`alter table provider_webhook_events add constraint provider_webhook_events_status_check
      check (status in ('received','routed','ignored','failed'))`);

    await knex.schema.createTable('requesters', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.text('mode').notNullable();
      t.text('public_key');
      t.text('created_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.unique(['org_id', 'name']);
    });
    await knex.raw(`alter table requesters add constraint requesters_mode_check check (mode in ('light','strict'))`);

    await knex.schema.createTable('m2m_clients', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.jsonb('scopes').notNullable();
      t.uuid('requester_id').references('requesters.id').onDelete('SET NULL');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('revoked_at', { useTz: true });
      t.index(['org_id']);
    });

    await knex.schema.createTable('m2m_client_secrets', (t) => {
      t.uuid('id').primary();
      t.uuid('client_id').notNullable().references('m2m_clients.id').onDelete('CASCADE');
      t.text('hash').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('expires_at', { useTz: true });
      t.index(['client_id']);
    });
  },

  async down(knex: Knex): Promise<void> {
    for (const table of ['m2m_client_secrets', 'm2m_clients', 'requesters', 'provider_webhook_events', 'provider_integrations']) {
      await knex.schema.dropTableIfExists(table);
    }
  },
};
