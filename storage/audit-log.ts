import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { TroupeError } from '../ops/kernel/errors.js';
import { canonicalJson } from '../ops/kernel/canonical-json.js';
import { withStorageErrors } from './storage-errors.js';

/**
 * The per-org hash-chained audit log (table `audit_log`, migration 0002).
 *
 * Each org has its own chain: `seq` counts 1, 2, 3 … without gaps, and every entry's
 * `hash = sha256hex(prev_hash + canonicalJson(entry))`, where `prev_hash` is the previous entry's hash (64 zeros
 * for seq 1). Changing, removing or reordering any stored entry breaks every hash from there on, which
 * `verifyAudit` reports. Appends for one org are serialised by a transaction-scoped advisory lock, so concurrent
 * appends from any number of nodes never fork the chain or skip a number. Deleting the newest entries cannot be
 * detected from the chain alone; see ops/decisions/0002-storage-layout.md.
 */

export const GENESIS_HASH = '0'.repeat(64);

/** Limits on what one entry may carry; these are our own identifiers and event names, never user prose. */
const MAX_FIELD_LENGTH = 512;
const MAX_PAYLOAD_BYTES = 64 * 1024;
const DEFAULT_PAGE = 50;
const MAX_PAGE = 500;
const VERIFY_BATCH = 1000;

export interface AuditInput {
  orgId: string;
  /** What happened, e.g. `workflow.version_created`. */
  type: string;
  /** Who did it: a user id, key id, worker id or `system`. */
  actor: string;
  /** What it happened to, e.g. a workflow id. */
  subject?: string | null;
  payload?: unknown;
  /** When it happened; defaults to now. Millisecond precision (it is part of the hash). */
  at?: Date;
}

export interface AuditEntry {
  orgId: string;
  seq: number;
  id: string;
  type: string;
  actor: string;
  subject: string | null;
  payload: unknown;
  prevHash: string;
  hash: string;
  /** ISO 8601, UTC, milliseconds. */
  createdAt: string;
}

export interface AuditPage {
  /** Newest first. */
  entries: AuditEntry[];
  /** Pass back as `cursor` for the next (older) page; null when there is none. */
  nextCursor: string | null;
}

export interface AuditVerification {
  valid: boolean;
  /** Entries examined, including the first broken one. */
  checked: number;
  /** The first sequence number at which the chain does not hold. */
  firstBrokenSeq?: number;
}

interface AuditRow {
  org_id: string;
  seq: number | string;
  id: string;
  type: string;
  actor: string;
  subject: string | null;
  payload: unknown;
  prev_hash: string;
  hash: string;
  created_at: Date;
}

/**
 * Appends one entry and returns its place in the chain. Pass the caller's transaction to make the entry part of
 * the same commit as the change it records; the org's chain stays locked until that transaction ends.
 */
export async function appendAudit(db: Knex | Knex.Transaction, input: AuditInput): Promise<{ seq: number; hash: string }> {
  const [appended] = await appendAuditEntries(db, requireField('orgId', input.orgId), [input]);
  return appended!;
}

/**
 * Appends entries of one org in the order given, under one lock and one read of the chain's head (the audit
 * outbox drain moves many at a time). Every entry is checked before anything is written.
 */
export async function appendAuditEntries(
  db: Knex | Knex.Transaction, orgId: string, inputs: readonly AuditInput[],
): Promise<Array<{ seq: number; hash: string }>> {
  const checked = inputs.map((input) => {
    if (requireField('orgId', input.orgId) !== orgId) throw new TroupeError('INTERNAL', 'audit entries of one append must share their org');
    const type = requireField('type', input.type);
    const actor = requireField('actor', input.actor);
    // An empty subject is no subject (e.g. a webhook that sent no id), not an error.
    const subject = input.subject === undefined || input.subject === null || input.subject === '' ? null : requireField('subject', input.subject);
    const payload = normalisePayload(input.payload);
    const at = input.at ?? new Date();
    if (!(at instanceof Date) || Number.isNaN(at.getTime())) throw new TroupeError('VALIDATION_FAILED', 'audit time is not a valid date');
    return { type, actor, subject, payload, createdAt: at.toISOString(), id: randomUUID() };
  });
  if (checked.length === 0) return [];

  return withStorageErrors(() =>
    db.transaction(async (trx) => {
      await trx.raw("select pg_advisory_xact_lock(hashtext('troupe.audit_log'), hashtext(?))", [orgId]);
      const last = await trx<AuditRow>('audit_log').select('seq', 'hash').where({ org_id: orgId }).orderBy('seq', 'desc').first();
      let seq = last ? Number(last.seq) : 0;
      let prevHash = last ? last.hash : GENESIS_HASH;
      const rows = [];
      const appended = [];
      for (const entry of checked) {
        seq += 1;
        const hash = chainHash(prevHash, { orgId, seq, ...entry });
        rows.push({
          org_id: orgId, seq, id: entry.id, type: entry.type, actor: entry.actor, subject: entry.subject,
          payload: JSON.stringify(entry.payload), prev_hash: prevHash, hash, created_at: entry.createdAt,
        });
        appended.push({ seq, hash });
        prevHash = hash;
      }
      await trx('audit_log').insert(rows);
      return appended;
    }),
  );
}

export async function listAudit(knex: Knex, orgId: string, opts: { limit?: number; cursor?: string | null } = {}): Promise<AuditPage> {
  const limit = pageSize(opts.limit);
  const before = opts.cursor === undefined || opts.cursor === null || opts.cursor === '' ? undefined : parseCursor(opts.cursor);
  const rows = await withStorageErrors(() => {
    const query = knex<AuditRow>('audit_log').select('*').where({ org_id: orgId }).orderBy('seq', 'desc').limit(limit + 1);
    if (before !== undefined) query.andWhere('seq', '<', before);
    return query;
  });
  const entries = rows.slice(0, limit).map(toEntry);
  const last = entries[entries.length - 1];
  return { entries, nextCursor: rows.length > limit && last ? String(last.seq) : null };
}

/** Recomputes the org's chain from seq 1, in bounded batches, and stops at the first entry that does not hold. */
export async function verifyAudit(knex: Knex, orgId: string): Promise<AuditVerification> {
  let expectedSeq = 1;
  let prevHash = GENESIS_HASH;
  let checked = 0;
  for (;;) {
    const after = expectedSeq - 1;
    const rows = await withStorageErrors(() =>
      knex<AuditRow>('audit_log').select('*').where({ org_id: orgId }).andWhere('seq', '>', after).orderBy('seq', 'asc').limit(VERIFY_BATCH),
    );
    for (const row of rows) {
      checked += 1;
      const entry = toEntry(row);
      const intact =
        entry.seq === expectedSeq &&
        entry.prevHash === prevHash &&
        entry.hash === chainHash(prevHash, entry);
      if (!intact) return { valid: false, checked, firstBrokenSeq: expectedSeq };
      prevHash = entry.hash;
      expectedSeq += 1;
    }
    if (rows.length < VERIFY_BATCH) return { valid: true, checked };
  }
}

interface HashedFields {
  orgId: string;
  seq: number;
  id: string;
  type: string;
  actor: string;
  subject: string | null;
  payload: unknown;
  createdAt: string;
}

/** Exactly these fields are hashed, whatever else the object passed in carries. */
export function chainHash(prevHash: string, fields: HashedFields): string {
  const { orgId, seq, id, type, actor, subject, payload, createdAt } = fields;
  const hashed = canonicalJson({ orgId, seq, id, type, actor, subject, payload, createdAt });
  return createHash('sha256').update(prevHash).update(hashed).digest('hex');
}

function toEntry(row: AuditRow): AuditEntry {
  return {
    orgId: row.org_id,
    seq: Number(row.seq),
    id: row.id,
    type: row.type,
    actor: row.actor,
    subject: row.subject,
    payload: row.payload,
    prevHash: row.prev_hash,
    hash: row.hash,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

function requireField(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_FIELD_LENGTH) {
    throw new TroupeError('VALIDATION_FAILED', `audit ${name} must be a string of 1..${MAX_FIELD_LENGTH} characters`);
  }
  return value;
}

/**
 * The payload is stored as jsonb and read back for verification, so it is hashed in the form jsonb returns:
 * plain JSON (a JSON round trip drops undefined, functions and class identity) with sorted keys.
 */
function normalisePayload(payload: unknown): unknown {
  const text = JSON.stringify(payload ?? {});
  if (text === undefined) throw new TroupeError('VALIDATION_FAILED', 'audit payload is not JSON');
  if (Buffer.byteLength(text, 'utf8') > MAX_PAYLOAD_BYTES) {
    throw new TroupeError('VALIDATION_FAILED', `audit payload exceeds ${MAX_PAYLOAD_BYTES} bytes`);
  }
  return JSON.parse(text) as unknown;
}

function pageSize(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE;
  if (!Number.isInteger(limit) || limit < 1) throw new TroupeError('HTTP_BAD_QUERY', 'limit must be a positive integer');
  return Math.min(limit, MAX_PAGE);
}

function parseCursor(cursor: string): number {
  if (!/^[1-9]\d{0,14}$/.test(cursor)) throw new TroupeError('HTTP_BAD_QUERY', 'cursor is invalid');
  return Number(cursor);
}
