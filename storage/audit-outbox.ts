import type { Knex } from 'knex';
import { appendAuditEntries, type AuditInput } from './audit-log.js';
import { withStorageErrors } from './storage-errors.js';

/**
 * The audit outbox (table `audit_outbox`, migration 0044, decision 0041): entries recorded off the request path.
 * `recordAuditLater` writes one row (pass the change's transaction to make the entry part of its commit);
 * `drainAuditOutbox` moves the oldest rows into their orgs' hash chains (in the order recorded, within one drain)
 * and deletes them in one transaction, so an entry is in the chain exactly once whatever crashes; its time is when
 * it happened, not when it was moved. Rows are taken `for update skip locked`: several nodes drain
 * at once without waiting on each other or moving a row twice.
 */
export async function recordAuditLater(db: Knex | Knex.Transaction, input: AuditInput & { at: Date }): Promise<void> {
  await withStorageErrors(() =>
    db('audit_outbox').insert({
      org_id: input.orgId, type: input.type, actor: input.actor, subject: input.subject ?? null,
      payload: JSON.stringify(input.payload ?? {}), at: input.at,
    }),
  );
}

interface OutboxRow {
  id: string;
  org_id: string;
  type: string;
  actor: string;
  subject: string | null;
  payload: unknown;
  at: Date;
}

/** Moves up to `limit` of the oldest waiting entries into the chain; returns how many moved. */
export async function drainAuditOutbox(db: Knex, limit = 500): Promise<number> {
  return withStorageErrors(() =>
    db.transaction(async (trx) => {
      const rows = await trx<OutboxRow>('audit_outbox').select('*').orderBy('id', 'asc').limit(limit).forUpdate().skipLocked();
      if (rows.length === 0) return 0;
      const byOrg = new Map<string, AuditInput[]>();
      for (const row of rows) {
        const entries = byOrg.get(row.org_id) ?? [];
        entries.push({ orgId: row.org_id, type: row.type, actor: row.actor, subject: row.subject, payload: row.payload, at: new Date(row.at) });
        byOrg.set(row.org_id, entries);
      }
      // Orgs' chain locks are taken in one global order, so two drains never wait on each other in a cycle.
      for (const orgId of [...byOrg.keys()].sort()) await appendAuditEntries(trx, orgId, byOrg.get(orgId)!);
      await trx('audit_outbox').whereIn('id', rows.map((r) => r.id)).delete();
      return rows.length;
    }),
  );
}

/** Entries still waiting (tests and the drain's metric). */
export async function auditOutboxDepth(db: Knex): Promise<number> {
  const [row] = await withStorageErrors(() => db('audit_outbox').count<{ n: string }[]>('* as n'));
  return Number(row?.n ?? 0);
}
