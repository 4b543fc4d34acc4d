import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Daemon extras (decision 0012): stored credentials, who listens for their rotation, and plugin option snapshots.
 * - `org_credentials`: one per (org, kind). `provider` names the entry of the provider registry that resolves it
 *   (actors/services/credentials/providers.ts); `sealed_value` is the static provider's value sealed with the master key
 *   under the context `<orgId>:<kind>`, so a row copied to another org or kind does not open.
 * - `credential_stream_presence`: per (org, node), how many rotate-stream subscribers that node holds and when it
 *   last said so. A rotation answers the sum over rows refreshed within the presence window; a dead node's row
 *   simply ages out.
 * - `plugin_option_snapshots`: option metadata of installed plugin verbs, upserted by (org, project, plugin, verb).
 */
export const daemonExtrasMigration: Migration = {
  name: '0008_daemon_extras',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('org_credentials', (t) => {
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.text('kind').notNullable();
      t.text('provider').notNullable();
      t.text('sealed_value');
      t.text('updated_by').notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.timestamp('rotated_at', { useTz: true });
      t.primary(['org_id', 'kind']);
    });

    await knex.schema.createTable('credential_stream_presence', (t) => {
      t.uuid('org_id').notNullable();
      t.text('node_id').notNullable();
      t.integer('subscribers').notNullable();
      t.timestamp('refreshed_at', { useTz: true }).notNullable();
      t.primary(['org_id', 'node_id']);
      t.index(['node_id']);
    });

    await knex.schema.createTable('plugin_option_snapshots', (t) => {
      t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
      t.uuid('project_id').notNullable();
      t.text('plugin_id').notNullable();
      t.text('verb_id').notNullable();
      t.jsonb('options').notNullable();
      t.text('updated_by').notNullable();
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.primary(['org_id', 'project_id', 'plugin_id', 'verb_id']);
    });
  },

  async down(knex: Knex): Promise<void> {
    for (const table of ['plugin_option_snapshots', 'credential_stream_presence', 'org_credentials']) {
      await knex.schema.dropTableIfExists(table);
    }
  },
};
