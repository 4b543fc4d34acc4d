import type { Knex } from 'knex';
import { sqlQuery } from '../sql-tx.js';

/**
 * How long transcripts are kept (issue 35 §1): per org, `transcript_retention_days` of `org_settings` (30 when the
 * org never set it; 0 keeps them forever). A transcript is old when its last entry is: a session still writing is
 * never swept under itself. Deletion goes in small batches (a bounded number of rows per statement) so that a
 * sweep never holds locks or a transaction for long; the head stays (with `purged_seq`), so a session that writes
 * again continues its numbering and a reader learns what was deleted rather than seeing `seq` restart.
 */
export const DEFAULT_TRANSCRIPT_RETENTION_DAYS = 30;
export const MAX_TRANSCRIPT_RETENTION_DAYS = 36_500;

export interface OrgSettings {
  readonly transcriptRetentionDays: number;
  readonly updatedAt: string | null;
  readonly updatedBy: string | null;
}

export async function orgSettings(db: Knex, orgId: string): Promise<OrgSettings> {
  const row = await db('org_settings').where({ org_id: orgId }).first('transcript_retention_days', 'updated_at', 'updated_by');
  if (!row) return { transcriptRetentionDays: DEFAULT_TRANSCRIPT_RETENTION_DAYS, updatedAt: null, updatedBy: null };
  return {
    transcriptRetentionDays: Number(row.transcript_retention_days),
    updatedAt: new Date(row.updated_at as string).toISOString(),
    updatedBy: row.updated_by as string,
  };
}

/** Writes the members given; returns the settings before, for the audit entry. */
export async function setOrgSettings(
  db: Knex, orgId: string, change: { transcriptRetentionDays?: number }, by: string, at: Date,
): Promise<{ before: OrgSettings; after: OrgSettings }> {
  const before = await orgSettings(db, orgId);
  const days = change.transcriptRetentionDays ?? before.transcriptRetentionDays;
  await db('org_settings')
    .insert({ org_id: orgId, transcript_retention_days: days, updated_at: at, updated_by: by })
    .onConflict('org_id').merge(['transcript_retention_days', 'updated_at', 'updated_by']);
  return { before, after: await orgSettings(db, orgId) };
}

/** A transcript the sweeper may delete from: entries after `purgedSeq` up to `lastSeq` are older than its org's retention. */
export interface ExpiredTranscript {
  readonly orgId: string;
  readonly sessionKey: string;
  readonly purgedSeq: number;
  readonly lastSeq: number;
}

/**
 * Up to `limit` transcripts whose last entry is older than their org's retention, oldest first. The partial index
 * (migration 0054) holds only transcripts with entries left, so forgotten ones cost the scan nothing.
 */
export async function expiredTranscripts(db: Knex, now: Date, limit: number): Promise<ExpiredTranscript[]> {
  const rows = await sqlQuery<{ org_id: string; session_id: string; purged_seq: string; last_seq: string }>(db,
    `select h.org_id, h.session_id, h.purged_seq, h.last_seq
       from session_transcript_heads h left join org_settings o on o.org_id = h.org_id
      where h.purged_seq < h.last_seq
        and h.updated_at < $1::timestamptz - make_interval(days => coalesce(o.transcript_retention_days, $2))
        and coalesce(o.transcript_retention_days, $2) > 0
      order by h.updated_at limit $3`,
    [now, DEFAULT_TRANSCRIPT_RETENTION_DAYS, limit]);
  return rows.map((r) => ({ orgId: r.org_id, sessionKey: r.session_id, purgedSeq: Number(r.purged_seq), lastSeq: Number(r.last_seq) }));
}

/**
 * Deletes at most `batch` entries of one expired transcript, from its oldest, and moves its `purged_seq` past them.
 * The head is moved only while it is still old (`updated_at` before `olderThan`): a session that wrote again since
 * keeps its new entries (they are after `lastSeq`, which bounds the delete anyway). Returns the entries deleted.
 */
export async function purgeTranscriptBatch(db: Knex, t: ExpiredTranscript, batch: number): Promise<number> {
  const upTo = Math.min(t.lastSeq, t.purgedSeq + batch);
  const deleted = await sqlQuery<{ seq: string }>(db,
    `delete from session_transcript_entries where org_id = $1 and session_id = $2 and seq > $3 and seq <= $4 returning seq`,
    [t.orgId, t.sessionKey, t.purgedSeq, upTo]);
  await sqlQuery(db,
    'update session_transcript_heads set purged_seq = greatest(purged_seq, $3) where org_id = $1 and session_id = $2',
    [t.orgId, t.sessionKey, upTo]);
  return deleted.length;
}
