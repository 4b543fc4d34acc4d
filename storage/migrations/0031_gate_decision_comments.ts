import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/** What an approver wrote beside a gate decision (decision 0030): shown in the inbox and the run's history. */
export const gateDecisionCommentsMigration: Migration = {
  name: '0031_gate_decision_comments',

  async up(knex: Knex): Promise<void> {
    await knex.schema.alterTable('approval_gates', (t) => {
      t.text('decision_comment');
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.alterTable('approval_gates', (t) => t.dropColumn('decision_comment'));
  },
};
