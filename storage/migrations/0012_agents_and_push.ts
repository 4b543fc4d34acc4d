import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * External agents, agent cards with the marketplace, and web push (decision 0015).
 * - `external_agents`: projected by the external-agent actor (`external-agent/<id>`); one per (org, url).
 * - `agent_cards` / `agent_card_versions`: projected by the agent-card actor (`agent-card/<id>`). An installed card
 *   carries its listing, the source version it is pinned to and the org's overlay; `payload` is the materialized
 *   projection (source payload with the overlay applied). Versions are append-only.
 * - `marketplace_listings`: one per published card; the listing follows its card's newest version.
 * - `web_push_subscriptions`: W3C push subscriptions, one per (user, endpoint).
 * - `web_push_vapid`: the node-wide VAPID key pair, generated once; the private key sealed with the master key.
 */
export const agentsAndPushMigration: Migration = {
  name: '0012_agents_and_push',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('external_agents', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('url').notNullable();
      t.text('trust_level').notNullable();
      t.jsonb('card').notNullable();
      t.boolean('reachable').notNullable();
      t.timestamp('last_fetched_at', { useTz: true });
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.unique(['org_id', 'url']);
    });
    await knex.raw(`alter table external_agents add constraint external_agents_trust_check check (trust_level in ('untrusted','verified','internal'))`);

    await knex.schema.createTable('agent_cards', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.integer('version').notNullable();
      t.jsonb('payload').notNullable();
      t.uuid('listing_id');
      t.integer('pinned_version');
      t.jsonb('overlay');
      t.text('created_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.index(['org_id']);
    });

    await knex.schema.createTable('agent_card_versions', (t) => {
      t.uuid('agent_card_id').notNullable().references('agent_cards.id').onDelete('CASCADE');
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.integer('version').notNullable();
      t.jsonb('payload').notNullable();
      t.integer('source_version');
      t.text('changed_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.primary(['agent_card_id', 'version']);
    });

    await knex.schema.createTable('marketplace_listings', (t) => {
      t.uuid('id').primary();
      t.uuid('publisher_org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('agent_card_id').notNullable().unique().references('agent_cards.id').onDelete('CASCADE');
      t.text('published_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
    });

    await knex.schema.createTable('web_push_subscriptions', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('user_id').notNullable();
      t.text('endpoint').notNullable();
      t.text('p256dh').notNullable();
      t.text('auth').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.unique(['user_id', 'endpoint']);
      t.index(['org_id', 'user_id']);
    });

    await knex.schema.createTable('web_push_vapid', (t) => {
      t.integer('id').primary();
      t.text('public_key').notNullable();
      t.text('sealed_private_key').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
    });
    await knex.raw('alter table web_push_vapid add constraint web_push_vapid_singleton check (id = 1)');
  },

  async down(knex: Knex): Promise<void> {
    for (const table of ['web_push_vapid', 'web_push_subscriptions', 'marketplace_listings', 'agent_card_versions', 'agent_cards', 'external_agents']) {
      await knex.schema.dropTableIfExists(table);
    }
  },
};
