import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * The agent's line to the team (issue 35 §3, decision 0088).
 * - `session_agent_requests`: what an agent in a session asked a person through `troupe mcp` (an approval, or a tool
 *   permission), one row per approval gate it opened, with what the approver is shown beside the gate's title (the
 *   details, or the tool and its input) and the run (epoch) it belongs to: the wait ends with the run.
 * - `tracker_comments.body`: the text of a comment the agent wrote (`kind = 'agent'`); the outbox posts it as is,
 *   where the comments a session's end owes are composed when sent.
 */
export const sessionAgentLineMigration: Migration = {
  name: '0056_session_agent_line',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('session_agent_requests', (t) => {
      t.uuid('gate_id').primary();
      t.uuid('org_id').notNullable();
      t.string('session_id', 16).notNullable();
      t.integer('epoch').notNullable();
      t.text('kind').notNullable();
      t.text('summary').notNullable();
      t.text('details');
      t.text('tool_name');
      t.jsonb('tool_input');
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.index(['org_id', 'session_id', 'epoch']);
    });
    await knex.raw(`alter table session_agent_requests add constraint session_agent_requests_kind_check check (kind in ('approval','tool'))`);
    await knex.schema.alterTable('tracker_comments', (t) => {
      t.text('body');
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('tracker_comments', (t) => {
      t.dropColumn('body');
    });
    await knex.schema.dropTable('session_agent_requests');
  },
};
