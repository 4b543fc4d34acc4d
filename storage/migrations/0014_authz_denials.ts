import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Authorization denials (decision 0009 "Recorded denials"): one row per refused `authorize`, append-only, written
 * in batches off the request path by `storage/governance/authz-denials.ts` and pruned by age (the longest
 * security-metrics window). No foreign key to `orgs`: a denial of a caller whose org is gone is still a fact, and
 * the batch writer must never fail a whole batch on one row; rows go with age instead.
 */
export const authzDenialsMigration: Migration = {
  name: '0014_authz_denials',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('authz_denials', (t) => {
      t.bigIncrements('id').primary();
      t.uuid('org_id').notNullable();
      t.text('principal_kind').notNullable();
      t.text('principal_id').notNullable();
      t.text('action').notNullable();
      t.text('resource_type').notNullable();
      t.jsonb('determining_policies').notNullable();
      t.boolean('evaluation_error').notNullable();
      t.timestamp('at', { useTz: true }).notNullable();
      t.index(['org_id', 'at']);
      t.index(['at']);
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('authz_denials');
  },
};
