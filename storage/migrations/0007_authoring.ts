import type { Knex } from 'knex';
import type { Migration } from './migration.js';
import { dropImmutableRowsFunction, makeRowsImmutable } from './immutable-rows.js';

/**
 * The authoring helpers' own store (ops/decisions/0011-authoring.md): isolated proposals, apart from every runtime
 * table. `authoring_proposals` is the head of each proposal; `authoring_proposal_versions` holds one immutable row
 * per apply (a trigger refuses UPDATE and DELETE). Both are projected by the proposal actor (`proposal/<id>`) in
 * its snapshot transaction, together with the `proposal.version_created` audit entry.
 */
export const authoringMigration: Migration = {
  name: '0007_authoring',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('authoring_proposals', (t) => {
      t.uuid('id').primary();
      t.uuid('org_id').notNullable();
      t.uuid('project_id').notNullable();
      t.text('target').notNullable();
      t.text('workflow_id').notNullable();
      t.text('status').notNullable();
      t.integer('version').notNullable();
      t.text('created_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.index(['org_id', 'project_id', 'created_at']);
    });
    await knex.schema.createTable('authoring_proposal_versions', (t) => {
      t.uuid('proposal_id').notNullable().references('authoring_proposals.id').onDelete('CASCADE');
      t.integer('version').notNullable();
      t.uuid('org_id').notNullable();
      t.jsonb('plan').notNullable();
      t.text('candidate_digest').notNullable();
      t.text('base_digest').notNullable();
      t.text('vocabulary_digest').notNullable();
      t.text('policy_digest').notNullable();
      t.text('created_by').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.primary(['proposal_id', 'version']);
    });
    await makeRowsImmutable(knex, 'authoring_proposal_versions', { allowCascades: true });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('authoring_proposal_versions');
    await knex.schema.dropTableIfExists('authoring_proposals');
    await dropImmutableRowsFunction(knex, 'authoring_proposal_versions');
  },
};
