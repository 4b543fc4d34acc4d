import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Audit entries recorded off the request path (decision 0041): a row here is written before the reply (in the
 * change's own transaction where there is one) and moved into the org's hash chain by the node's outbox drain, so a
 * crash between the reply and the chain append loses nothing. `at` is when it happened; the chain keeps it.
 */
export const auditOutboxMigration: Migration = {
  name: '0044_audit_outbox',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('audit_outbox', (t) => {
      t.bigIncrements('id').primary();
      t.text('org_id').notNullable();
      t.text('type').notNullable();
      t.text('actor').notNullable();
      t.text('subject');
      t.jsonb('payload').notNullable();
      t.timestamp('at', { useTz: true }).notNullable();
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTable('audit_outbox');
  },
};
