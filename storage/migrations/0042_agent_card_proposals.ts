import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Agent-card drafts stored as proposals (issue 17; decision 0029): a proposal names the agent card it is about
 * ('' for a new card, and for workflow proposals). Its versions keep the candidate card in the `plan` column, which
 * holds each version's candidate whatever the target.
 */
export const agentCardProposalsMigration: Migration = {
  name: '0042_agent_card_proposals',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('authoring_proposals', (t) => {
      t.text('agent_card_id').notNullable().defaultTo('');
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('authoring_proposals', (t) => t.dropColumn('agent_card_id'));
  },
};
