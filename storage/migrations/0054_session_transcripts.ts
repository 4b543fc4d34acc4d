import type { Knex } from 'knex';
import type { Migration } from './migration.js';

/**
 * The whole transcript of a session (issue 35 §1, decision 0084).
 * - `session_transcript_entries`: one row per entry (an output line, a prompt, a tool step, a status change, a
 *   notice), keyed by (org, session key, seq). `kind` is a small code (storage/sessions/transcript-kinds.ts) and
 *   `data` is null for output lines, so an output line costs its text and a fixed ~40 bytes. Entries arrive in
 *   batches (one multi-row insert per worker request or session transition).
 * - `session_transcript_heads`: one row per session with a transcript: the last `seq` handed out (a row lock on it
 *   makes `seq` gap-free across nodes), the bytes kept (against TROUPE_TRANSCRIPT_MAX_BYTES), where the cap cut it
 *   and what it dropped since, the run entries belong to, and how far retention has deleted (`purged_seq`).
 * - `org_settings`: per-org settings, first `transcript_retention_days` (30 by default, 0 keeps transcripts forever).
 */
export const sessionTranscriptsMigration: Migration = {
  name: '0054_session_transcripts',

  async up(knex: Knex): Promise<void> {
    await knex.schema.createTable('session_transcript_entries', (t) => {
      t.uuid('org_id').notNullable();
      t.string('session_id', 16).notNullable();
      t.bigInteger('seq').notNullable();
      t.timestamp('at', { useTz: true }).notNullable();
      t.smallint('kind').notNullable();
      t.integer('run');
      t.text('text').notNullable();
      t.jsonb('data');
      t.primary(['org_id', 'session_id', 'seq']);
    });
    await knex.schema.createTable('session_transcript_heads', (t) => {
      t.uuid('org_id').notNullable();
      t.string('session_id', 16).notNullable();
      t.bigInteger('last_seq').notNullable();
      t.bigInteger('bytes').notNullable();
      t.integer('run');
      t.bigInteger('cut_seq');
      t.bigInteger('dropped_entries').notNullable().defaultTo(0);
      t.bigInteger('dropped_bytes').notNullable().defaultTo(0);
      t.bigInteger('purged_seq').notNullable().defaultTo(0);
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.primary(['org_id', 'session_id']);
    });
    // The retention sweeper's scan: transcripts with entries left, oldest last write first.
    await knex.raw('create index session_transcript_heads_sweep_idx on session_transcript_heads (updated_at) where purged_seq < last_seq');
    await knex.schema.createTable('org_settings', (t) => {
      t.uuid('org_id').primary().references('orgs.id').onDelete('CASCADE');
      t.integer('transcript_retention_days').notNullable().defaultTo(30);
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.text('updated_by').notNullable();
    });
  },

  async down(knex: Knex): Promise<void> {
    await knex.schema.dropTableIfExists('org_settings');
    await knex.schema.dropTableIfExists('session_transcript_heads');
    await knex.schema.dropTableIfExists('session_transcript_entries');
  },
};
