import type { Knex } from 'knex';
import type { Migration } from './migration.js';
import { dropImmutableRowsFunction, makeRowsImmutable } from './immutable-rows.js';

/**
 * The per-org hash-chained audit log (storage/audit-log.ts). Rows are immutable in storage: a trigger rejects
 * UPDATE, DELETE and TRUNCATE, so a bug or a careless script cannot rewrite history through the application role.
 * Whoever owns the table can still `ALTER TABLE audit_log DISABLE TRIGGER USER`; that is what tests do to
 * simulate tampering, and what `verifyAudit` exists to detect.
 */
export const auditLog: Migration = {
  name: '0002_audit_log',
  async up(knex: Knex) {
    await knex.raw(`
      create table audit_log (
        org_id     text not null,
        seq        bigint not null check (seq > 0),
        id         uuid not null unique,
        type       text not null,
        actor      text not null,
        subject    text,
        payload    jsonb not null,
        prev_hash  text not null,
        hash       text not null,
        created_at timestamptz not null,
        primary key (org_id, seq)
      )`);
    await makeRowsImmutable(knex, 'audit_log');
  },
  async down(knex: Knex) {
    await knex.raw('drop table if exists audit_log');
    await dropImmutableRowsFunction(knex, 'audit_log');
  },
};
