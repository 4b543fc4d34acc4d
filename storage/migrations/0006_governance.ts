import type { Knex } from 'knex';
import type { Migration } from './migration.js';
import { dropImmutableRowsFunction, makeRowsImmutable } from './immutable-rows.js';

/**
 * Governance read models and webhook bookkeeping (decision 0009).
 * - `policies` / `policy_versions`: projected by the policy actor (`policy/<id>`) in its snapshot transaction;
 *   versions are append-only (a trigger refuses UPDATE and DELETE), one row per change of the Cedar text.
 * - `incidents`: projected by the incident actor (`incident/<id>`); one row per (org, source, external id).
 * - `incident_io_connections`: at most one per org. `sealed_secret` is the org's `whsec_` signing secret sealed with
 *   the master key (context `<orgId>:incident-io`); null marks an environment-only row, verified with the legacy
 *   `TROUPE_INCIDENT_IO_SECRET` instead.
 * - `webhook_deliveries`: webhook ids already accepted, the replay store; rows older than the replay window are
 *   pruned, since a delivery that old fails the timestamp check anyway.
 */
export const governanceMigration: Migration = {
  name: '0006_governance',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('policies', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('name').notNullable();
      t.text('description').notNullable().defaultTo('');
      t.text('cedar_policy').notNullable();
      t.text('scope').notNullable();
      t.text('scope_id').notNullable();
      t.text('status').notNullable();
      t.integer('version').notNullable();
      t.jsonb('regulatory_tags').notNullable().defaultTo('[]');
      t.jsonb('metadata').notNullable().defaultTo('{}');
      t.text('created_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.timestamp('archived_at', { useTz: true });
      t.index(['org_id', 'status']);
    });
    await knex.raw(`alter table policies add constraint policies_scope_check check (scope in ('workspace','project'))`);
    await knex.raw(`alter table policies add constraint policies_status_check check (status in ('draft','active','archived'))`);

    await knex.schema.createTable('policy_versions', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('policy_id').notNullable().references('policies.id').onDelete('CASCADE');
      t.integer('version').notNullable();
      t.text('cedar_policy').notNullable();
      t.text('changed_by').notNullable();
      t.text('change_reason').notNullable().defaultTo('');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.unique(['policy_id', 'version']);
    });
    await makeRowsImmutable(knex, 'policy_versions', { allowCascades: true });

    await knex.schema.createTable('incidents', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('source').notNullable();
      t.text('external_id').notNullable();
      t.text('title').notNullable();
      t.text('severity');
      t.text('status').notNullable();
      t.text('summary');
      t.text('url');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.timestamp('resolved_at', { useTz: true });
      t.unique(['org_id', 'source', 'external_id']);
      t.index(['org_id', 'created_at']);
    });

    await knex.schema.createTable('incident_io_connections', (t) => {
      t.uuid('org_id').primary().references('orgs.id').onDelete('CASCADE');
      t.text('sealed_secret');
      t.boolean('connected').notNullable().defaultTo(true);
      t.text('updated_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
    });

    await knex.schema.createTable('webhook_deliveries', (t) => {
      t.text('provider').notNullable();
      t.text('webhook_id').notNullable();
      t.uuid('org_id').notNullable();
      t.timestamp('received_at', { useTz: true }).notNullable();
      t.primary(['provider', 'webhook_id']);
      t.index(['received_at']);
    });
  },

  async down(knex: Knex): Promise<void> {
    for (const table of ['webhook_deliveries', 'incident_io_connections', 'incidents', 'policy_versions', 'policies']) {
      await knex.schema.dropTableIfExists(table);
    }
    await dropImmutableRowsFunction(knex, 'policy_versions');
  },
};
