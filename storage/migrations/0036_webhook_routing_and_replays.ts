import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Webhook hardening (issue 16, decision 0025):
 * - `provider_webhook_events.body_sha256`: the digest of the signed body, unique per (org, provider). GitHub and
 *   Linear carry their delivery id in an unsigned header, so a captured delivery replayed with a fresh id was new;
 *   the signed bytes are not. Rows from before have no digest (nulls never conflict).
 * - `webhook_deliveries` (the incident.io replay store) is keyed by (provider, org, webhook id): one org's ids no
 *   longer collide with, or reveal, another's.
 * - `incident_io_connections`: at most one connected environment-only row (the legacy environment secret belongs to
 *   one org, chosen by the platform admin). Where several exist, the earliest connected keeps it and the others are
 *   disconnected; the platform admin can move it.
 */
export const webhookRoutingAndReplaysMigration: Migration = {
  name: '0036_webhook_routing_and_replays',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('provider_webhook_events', (t) => {
      t.text('body_sha256');
      t.unique(['org_id', 'provider', 'body_sha256'], { indexName: 'provider_webhook_events_body_digest' });
    });

    await knex.raw('alter table webhook_deliveries drop constraint webhook_deliveries_pkey');
    await knex.schema.alterTable('webhook_deliveries', (t) => t.primary(['provider', 'org_id', 'webhook_id']));

    await knex.raw(`
      update incident_io_connections set connected = false
      where connected and sealed_secret is null and org_id <> (
        select org_id from incident_io_connections
        where connected and sealed_secret is null order by created_at, org_id limit 1)`);
    await knex.raw(`create unique index incident_io_one_environment_row on incident_io_connections ((true))
      where connected and sealed_secret is null`);
  },

  async down(knex: Knex): Promise<void> {
    await knex.raw('drop index if exists incident_io_one_environment_row');
    await knex.raw('alter table webhook_deliveries drop constraint webhook_deliveries_pkey');
    await knex.raw(`delete from webhook_deliveries a using webhook_deliveries b
      where a.provider = b.provider and a.webhook_id = b.webhook_id and a.ctid > b.ctid`);
    await knex.schema.alterTable('webhook_deliveries', (t) => t.primary(['provider', 'webhook_id']));
    await knex.schema.alterTable('provider_webhook_events', (t) => {
      t.dropUnique(['org_id', 'provider', 'body_sha256'], 'provider_webhook_events_body_digest');
      t.dropColumn('body_sha256');
    });
  },
};
