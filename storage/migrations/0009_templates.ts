import type { Knex } from 'knex';
import type { Migration } from './migration.js';
import { dropImmutableRowsFunction, makeRowsImmutable } from './immutable-rows.js';

/**
 * Workflow templates (actors/kinds/template). Both tables are read models projected by the template actor in its
 * snapshot transaction.
 * - `templates`: one row per (org, slug): the current draft and which version is live.
 * - `template_versions`: every publish, frozen. A trigger refuses UPDATE, DELETE and TRUNCATE, so a version, once
 *   live, can never be altered, also not by code that bypasses the actor.
 */
export const templatesMigration: Migration = {
  name: '0009_templates',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('templates', (t) => {
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('slug').notNullable();
      t.text('name').notNullable();
      t.text('description').notNullable();
      t.text('definition_yaml').notNullable();
      t.integer('draft_revision').notNullable();
      t.timestamp('draft_updated_at', { useTz: true }).notNullable();
      t.text('draft_updated_by').notNullable();
      t.integer('live_version');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.primary(['org_id', 'slug']);
    });
    await knex.schema.createTable('template_versions', (t) => {
      t.uuid('org_id').notNullable();
      t.text('slug').notNullable();
      t.integer('version').notNullable();
      t.text('name').notNullable();
      t.text('description').notNullable();
      t.text('definition_yaml').notNullable();
      t.text('definition_version').notNullable();
      t.text('schema_hash').notNullable();
      t.text('published_by').notNullable();
      t.text('change_reason');
      t.timestamp('published_at', { useTz: true }).notNullable();
      t.primary(['org_id', 'slug', 'version']);
      t.foreign(['org_id', 'slug']).references(['org_id', 'slug']).inTable('templates');
    });
    await knex.raw(`alter table template_versions add constraint template_versions_positive check (version > 0)`);
    await makeRowsImmutable(knex, 'template_versions');
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('template_versions');
    await dropImmutableRowsFunction(knex, 'template_versions');
    await knex.schema.dropTableIfExists('templates');
  },
};
