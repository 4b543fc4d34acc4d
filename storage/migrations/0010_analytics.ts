import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Operations and analytics (decision 0013).
 * - `phase_records`: one row per span a session run spends in one phase, written by the session actor's
 *   projection in its snapshot transaction; the source of phase metrics.
 * - `session_outcomes`: one append-only row per terminal session run (key = the run's terminal ledger key),
 *   written in the same transaction as the terminal effects. Router observations and platform aggregates both
 *   read it; it is never updated, so a published aggregate of a closed period never changes.
 * - `router_arms`: the Beta posterior per (org, provider, workType), bumped with each outcome.
 * - `router_decisions`: the arm Thompson sampling chose for a dispatch without a provider, with seed and draws.
 * - `graph_entities`, `graph_relationships`, `graph_recalls`: the project knowledge graph sessions record.
 */
export const analyticsMigration: Migration = {
  name: '0010_analytics',

  async up(knex: Knex): Promise<void> {
    await createPhaseRecordsTable(knex);
    await createSessionOutcomesTable(knex);
    await createRouterArmsTable(knex);
    await createRouterDecisionsTable(knex);
    await createGraphEntitiesTable(knex);
    await createGraphRelationshipsTable(knex);
    await createGraphRecallsTable(knex);
  },

  async down(knex: Knex): Promise<void> {
    for (const table of [
      'graph_recalls', 'graph_relationships', 'graph_entities', 'router_decisions', 'router_arms', 'session_outcomes', 'phase_records',
    ]) {
      await knex.schema.dropTableIfExists(table);
    }
  },
};

async function createPhaseRecordsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('phase_records', (t) => {
    // `<sessionId>:<epoch>:<phase>:<attempt>`: deterministic, so a replayed projection inserts nothing twice.
    t.text('id').primary();
    t.uuid('org_id').notNullable();
    t.uuid('project_id').notNullable();
    t.string('session_id', 16).notNullable();
    t.integer('epoch').notNullable();
    t.text('tracker_issue');
    t.text('phase').notNullable();
    // 1 for the first time a run enters this phase; 2+ means the run came back to it (rework).
    t.integer('attempt').notNullable();
    t.double('cost_at_start').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.timestamp('ended_at', { useTz: true });
    t.bigInteger('cycle_time_ms');
    t.double('cost_usd');
    // How the span ended: 'advanced' (another phase followed), 'completed', 'failed', 'stopped', 'requeued'.
    t.text('outcome');
    t.index(['org_id', 'started_at']);
    t.index(['session_id', 'epoch']);
  });
}

async function createSessionOutcomesTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('session_outcomes', (t) => {
    t.text('id').primary();
    t.uuid('org_id').notNullable();
    t.string('session_id', 16).notNullable();
    t.text('provider');
    t.text('work_type').notNullable();
    t.text('status').notNullable();
    t.boolean('success').notNullable();
    t.double('cost_usd').notNullable();
    t.bigInteger('duration_ms');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['org_id', 'created_at', 'id']);
    t.index(['created_at']);
  });
  await knex.raw(`alter table session_outcomes add constraint session_outcomes_status_check check (status in ('completed','failed','stopped'))`);
}

async function createRouterArmsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('router_arms', (t) => {
    t.uuid('org_id').notNullable();
    t.text('provider').notNullable();
    t.text('work_type').notNullable();
    t.double('alpha').notNullable();
    t.double('beta').notNullable();
    t.integer('samples').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.primary(['org_id', 'provider', 'work_type']);
  });
}

async function createRouterDecisionsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('router_decisions', (t) => {
    t.string('session_id', 16).primary();
    t.uuid('org_id').notNullable();
    t.text('request_id').notNullable();
    t.text('provider').notNullable();
    t.text('work_type').notNullable();
    t.jsonb('draws').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['org_id', 'created_at']);
  });
}

async function createGraphEntitiesTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('graph_entities', (t) => {
    t.uuid('id').primary();
    t.uuid('org_id').notNullable();
    t.uuid('project_id').notNullable();
    t.text('type').notNullable();
    t.text('name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.jsonb('properties').notNullable().defaultTo('{}');
    t.double('importance_weight').notNullable();
    t.double('feedback_weight').notNullable();
    t.integer('recall_sessions').notNullable().defaultTo(0);
    t.timestamp('last_recalled_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.unique(['project_id', 'type', 'name']);
    t.index(['project_id', 'importance_weight']);
  });
}

async function createGraphRelationshipsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('graph_relationships', (t) => {
    t.uuid('id').primary();
    t.uuid('org_id').notNullable();
    t.uuid('project_id').notNullable();
    t.uuid('source_id').notNullable().references('graph_entities.id').onDelete('CASCADE');
    t.uuid('target_id').notNullable().references('graph_entities.id').onDelete('CASCADE');
    t.text('relationship_name').notNullable();
    // How many times sessions recorded this relationship; the edge ranking.
    t.integer('weight').notNullable().defaultTo(1);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.unique(['source_id', 'target_id', 'relationship_name']);
    t.index(['project_id']);
  });
}

async function createGraphRecallsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('graph_recalls', (t) => {
    t.uuid('entity_id').notNullable().references('graph_entities.id').onDelete('CASCADE');
    t.string('session_id', 16).notNullable();
    t.timestamp('recalled_at', { useTz: true }).notNullable();
    t.primary(['entity_id', 'session_id']);
  });
}
