import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * Sessions and the daemon protocol (decision 0007). Every table is a read model written by the session or
 * daemon-host actor in its snapshot transaction, except where noted:
 * - `session_prompts` is also the worker inbox: a poll claims undelivered queued prompts with one UPDATE.
 * - `daemon_workers.last_seen_at` is written by the batched liveness writer (loss-tolerant, coalesced).
 * - `sessions.last_tool_called_at` is written by the batched step-heartbeat writer.
 * `session_effect_ledger` holds the idempotency key of every terminal effect that ran: a replayed projection
 * finds its key and does nothing twice.
 */
export const sessionsMigration: Migration = {
  name: '0004_sessions',

  async up(knex: Knex): Promise<void> {
    await createSessionsTable(knex);
    await createSessionPromptsTable(knex);
    await createSessionActivitiesTable(knex);
    await createSessionIssueLocksTable(knex);
    await createSessionEffectLedgerTable(knex);
    await createFleetQuotaUsageTable(knex);
    await createDaemonWorkersTable(knex);
    await createDaemonMutationsTable(knex);
  },

  async down(knex: Knex): Promise<void> {
    for (const table of [
      'daemon_mutations', 'daemon_workers', 'fleet_quota_usage', 'session_effect_ledger', 'session_issue_locks',
      'session_activities', 'session_prompts', 'sessions',
    ]) {
      await knex.schema.dropTableIfExists(table);
    }
  },
};

async function createSessionsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('sessions', (t) => {
    t.string('id', 16).primary();
    t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable();
    t.text('tracker_session_id').notNullable();
    t.text('tracker_issue');
    t.text('prompt').notNullable();
    t.text('agent_card_id');
    t.text('work_type');
    t.text('provider');
    t.text('requested_by').notNullable();
    t.text('status').notNullable();
    // The worker holding the claim; null once released (pending again, or terminal).
    t.text('worker_id');
    // The worker that last ran it, kept for the detail view after the claim is released.
    t.text('last_worker_id');
    t.integer('epoch').notNullable();
    t.double('cost_usd').notNullable().defaultTo(0);
    t.text('error');
    t.text('phase');
    // 'none' (no tracker issue), 'held' (holds its issue's lock), 'waiting' (another session holds it).
    t.text('lock_state').notNullable().defaultTo('none');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.timestamp('claimed_at', { useTz: true });
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.timestamp('last_tool_called_at', { useTz: true });
    t.index(['org_id', 'tracker_issue']);
    t.index(['status', 'project_id', 'created_at']);
    t.index(['worker_id']);
  });
}

async function createSessionPromptsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('session_prompts', (t) => {
    t.text('id').primary();
    t.string('session_id', 16).notNullable();
    t.uuid('org_id').notNullable();
    t.integer('epoch').notNullable();
    t.text('text').notNullable();
    t.boolean('queued').notNullable();
    t.text('requested_by');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('delivered_at', { useTz: true });
    t.timestamp('archived_at', { useTz: true });
    t.index(['session_id', 'created_at']);
  });
}

async function createSessionActivitiesTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('session_activities', (t) => {
    // The idempotency key of the effect that created it.
    t.text('id').primary();
    t.string('session_id', 16).notNullable();
    t.uuid('org_id').notNullable();
    t.text('kind').notNullable();
    t.text('body').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['session_id', 'created_at']);
  });
}

async function createSessionIssueLocksTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('session_issue_locks', (t) => {
    t.uuid('org_id').notNullable();
    t.text('tracker_issue').notNullable();
    t.string('session_id', 16).notNullable();
    t.timestamp('acquired_at', { useTz: true }).notNullable();
    t.primary(['org_id', 'tracker_issue']);
  });
}

async function createSessionEffectLedgerTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('session_effect_ledger', (t) => {
    t.text('key').primary();
    t.timestamp('recorded_at', { useTz: true }).notNullable();
  });
}

async function createFleetQuotaUsageTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('fleet_quota_usage', (t) => {
    t.uuid('org_id').notNullable();
    // UTC month, `YYYY-MM`.
    t.text('period').notNullable();
    t.integer('sessions').notNullable().defaultTo(0);
    t.double('cost_usd').notNullable().defaultTo(0);
    t.primary(['org_id', 'period']);
  });
}

async function createDaemonWorkersTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('daemon_workers', (t) => {
    // Text like sessions.worker_id, which it is joined on.
    t.text('id').primary();
    t.uuid('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.uuid('registration_id').notNullable();
    t.text('hostname').notNullable();
    t.integer('max_agents').notNullable();
    t.jsonb('project_ids').notNullable().defaultTo('[]');
    t.timestamp('registered_at', { useTz: true }).notNullable();
    t.timestamp('last_seen_at', { useTz: true }).notNullable();
    t.index(['org_id']);
    t.index(['last_seen_at']);
  });
}

async function createDaemonMutationsTable(knex: Knex): Promise<void> {
  await knex.schema.createTable('daemon_mutations', (t) => {
    t.uuid('id').primary();
    t.uuid('org_id').notNullable();
    t.text('worker_host_id').notNullable();
    t.text('requested_by').notNullable();
    t.text('op').notNullable();
    t.jsonb('params').notNullable();
    t.text('status').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('delivered_at', { useTz: true });
    t.timestamp('cancelled_at', { useTz: true });
    t.index(['org_id', 'worker_host_id', 'created_at']);
  });
  await knex.raw(`alter table daemon_mutations add constraint daemon_mutations_status_check check (status in ('pending','delivered','cancelled'))`);
}
