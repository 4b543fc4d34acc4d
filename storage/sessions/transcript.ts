import type { Knex } from 'knex';
import { inSqlTransaction, sqlQuery, type SqlTx } from '../sql-tx.js';
import { kindCode, kindOfCode, storableText, type NewTranscriptEntry, type TranscriptEntry } from './transcript-kinds.js';

/**
 * The whole transcript of a session (issue 35 §1, decision 0084): every entry gets the next `seq` of its session,
 * gap-free across nodes, because the head row (`session_transcript_heads`) is locked by the statement that hands the
 * numbers out and the entries are inserted by the same statement (or transaction). A batch of entries is one
 * multi-row insert; nothing here ever reads a whole transcript.
 */

/** What a batch became: the seqs it took (`first`..`last`), none when nothing was kept. */
export interface Appended {
  readonly first: number;
  readonly last: number;
}

const entryBytes = (e: NewTranscriptEntry): number => Buffer.byteLength(e.text, 'utf8') + (e.data === undefined ? 0 : Buffer.byteLength(JSON.stringify(e.data), 'utf8'));

function columns(entries: readonly NewTranscriptEntry[]) {
  return [
    entries.map((e) => kindCode(e.kind)),
    entries.map((e) => storableText(e.text)),
    entries.map((e) => e.at.toISOString()),
    entries.map((e) => e.run ?? null),
    entries.map((e) => (e.data === undefined ? null : JSON.stringify(e.data))),
  ];
}

const lastRun = (entries: readonly NewTranscriptEntry[]): number | null => {
  for (let i = entries.length - 1; i >= 0; i--) if (entries[i]!.run !== undefined) return entries[i]!.run!;
  return null;
};

/** The entries of a batch, numbered after the head's `base`, as one insert ($1 org, $2 session, $3 base, $4..$8 columns). */
const INSERT_NUMBERED = `insert into session_transcript_entries (org_id, session_id, seq, at, kind, run, text, data)
  select $1, $2, $3::bigint + v.ord, v.at, v.kind, coalesce(v.run, $9::int), v.text, v.data
    from unnest($4::smallint[], $5::text[], $6::timestamptz[], $7::int[], $8::jsonb[]) with ordinality as v(kind, text, at, run, data, ord)`;

/**
 * One statement for the usual batch: the head, when it exists, is not cut and has room for the batch, takes the
 * batch's numbers and bytes (its row lock serialises writers of one session), and the entries go in with them.
 * No row back means the slow path decides (first batch of a session, or the cap).
 */
const APPEND_FAST = `with h as (
    update session_transcript_heads set last_seq = last_seq + $3, bytes = bytes + $4, run = coalesce($10::int, run), updated_at = $11
     where org_id = $1 and session_id = $2 and ($12::bigint is null or (cut_seq is null and bytes + $4 <= $12::bigint))
     returning last_seq - $3 as base, run
  )
  insert into session_transcript_entries (org_id, session_id, seq, at, kind, run, text, data)
  select $1, $2, h.base + v.ord, v.at, v.kind, coalesce(v.run, h.run), v.text, v.data
    from h cross join unnest($5::smallint[], $6::text[], $7::timestamptz[], $8::int[], $9::jsonb[]) with ordinality as v(kind, text, at, run, data, ord)
  returning seq`;

/**
 * Appends `entries` to the session's transcript, in order. `capBytes` bounds what the transcript keeps (null: no
 * bound, for entries that must never be lost to output, such as a status change): the batch that would pass it keeps
 * what fits and ends the output with one `notice` entry saying what was cut; later capped batches are only counted.
 */
export async function appendTranscript(
  db: Knex, orgId: string, sessionKey: string, entries: readonly NewTranscriptEntry[], capBytes: number | null, now: Date,
): Promise<Appended | undefined> {
  if (entries.length === 0) return undefined;
  const bytes = entries.reduce((n, e) => n + entryBytes(e), 0);
  const rows = await sqlQuery<{ seq: string }>(db, APPEND_FAST, [
    orgId, sessionKey, entries.length, bytes, ...columns(entries), lastRun(entries), now, capBytes,
  ]);
  if (rows.length > 0) return { first: Number(rows[0]!.seq), last: Number(rows[rows.length - 1]!.seq) };
  return inSqlTransaction(db, (tx) => appendSlow(tx, orgId, sessionKey, entries, capBytes, now));
}

/** The same append inside a transaction the caller holds (the slow path always; cheap enough for rare batches). */
export function appendTranscriptIn(
  tx: SqlTx, orgId: string, sessionKey: string, entries: readonly NewTranscriptEntry[], capBytes: number | null, now: Date,
): Promise<Appended | undefined> {
  return appendSlow(tx, orgId, sessionKey, entries, capBytes, now);
}

/** The text of the notice that ends a transcript at its cap. */
export function cutNotice(capBytes: number): string {
  return `The transcript reached its limit of ${capBytes} bytes (TROUPE_TRANSCRIPT_MAX_BYTES): the agent's output and tool steps after `
    + 'this entry are not kept (status changes and prompts still are). The last 64 KiB of output stay in the session detail; '
    + 'the transcript reply counts what was dropped (`cut`).';
}

async function appendSlow(
  tx: SqlTx, orgId: string, sessionKey: string, entries: readonly NewTranscriptEntry[], capBytes: number | null, now: Date,
): Promise<Appended | undefined> {
  await tx.query(
    `insert into session_transcript_heads (org_id, session_id, last_seq, bytes, updated_at) values ($1, $2, 0, 0, $3)
     on conflict (org_id, session_id) do nothing`,
    [orgId, sessionKey, now],
  );
  const head = (await tx.query<{ last_seq: string; bytes: string; cut_seq: string | null; run: number | null }>(
    'select last_seq, bytes, cut_seq, run from session_transcript_heads where org_id = $1 and session_id = $2 for update', [orgId, sessionKey],
  )).rows[0]!;
  const base = Number(head.last_seq);
  let used = Number(head.bytes);
  // Past the cap only entries that are never cut (status changes, prompts: capBytes null) are still kept.
  if (head.cut_seq !== null && capBytes !== null) {
    const dropped = entries.reduce((n, e) => n + entryBytes(e), 0);
    await tx.query(
      `update session_transcript_heads set dropped_entries = dropped_entries + $3, dropped_bytes = dropped_bytes + $4, updated_at = $5
        where org_id = $1 and session_id = $2`,
      [orgId, sessionKey, entries.length, dropped, now],
    );
    return undefined;
  }
  const kept: NewTranscriptEntry[] = [];
  let droppedBytes = 0;
  // A prefix of the batch is kept: once one entry does not fit, none after it is kept either (no holes in the record).
  for (const e of entries) {
    const size = entryBytes(e);
    if (droppedBytes === 0 && (capBytes === null || used + size <= capBytes)) {
      kept.push(e);
      used += size;
    } else {
      droppedBytes += size;
    }
  }
  const cut = kept.length < entries.length;
  const written = cut ? [...kept, { kind: 'notice' as const, text: cutNotice(capBytes!), at: now }] : kept;
  const run = lastRun(entries) ?? head.run;
  await tx.query(INSERT_NUMBERED, [orgId, sessionKey, base, ...columns(written), run]);
  await tx.query(
    `update session_transcript_heads set last_seq = $3, bytes = $4, run = $5, cut_seq = coalesce(cut_seq, $6), dropped_entries = dropped_entries + $7,
        dropped_bytes = dropped_bytes + $8, updated_at = $9
      where org_id = $1 and session_id = $2`,
    [orgId, sessionKey, base + written.length, used, run, cut ? base + written.length : null, entries.length - kept.length, droppedBytes, now],
  );
  return { first: base + 1, last: base + written.length };
}

/** Where a transcript stands: its last seq, what retention deleted, and what the cap cut. */
export interface TranscriptHead {
  readonly lastSeq: number;
  /** Entries up to this seq were deleted by retention (0: none). */
  readonly purgedThrough: number;
  readonly cut: { readonly atSeq: number; readonly droppedEntries: number; readonly droppedBytes: number } | null;
}

export async function transcriptHead(db: Knex, orgId: string, sessionKey: string): Promise<TranscriptHead> {
  const row = (await sqlQuery<Record<string, string | null>>(
    db, 'select last_seq, purged_seq, cut_seq, dropped_entries, dropped_bytes from session_transcript_heads where org_id = $1 and session_id = $2',
    [orgId, sessionKey],
  ))[0];
  if (row === undefined) return { lastSeq: 0, purgedThrough: 0, cut: null };
  return {
    lastSeq: Number(row.last_seq),
    purgedThrough: Number(row.purged_seq),
    cut: row.cut_seq === null ? null : { atSeq: Number(row.cut_seq), droppedEntries: Number(row.dropped_entries), droppedBytes: Number(row.dropped_bytes) },
  };
}

interface EntryRow { seq: string; at: string; kind: number; run: number | null; text: string; data: Record<string, unknown> | string | null }

/**
 * `at` as `Date.toISOString` writes it, formatted by Postgres: a page of 1,000 entries otherwise parsed 1,000 dates
 * into objects only to print them again.
 */
const AT_ISO = `to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at`;

function entryOf(row: EntryRow): TranscriptEntry {
  const seq = Number(row.seq);
  const kind = kindOfCode(Number(row.kind));
  const run = row.run === null ? null : Number(row.run);
  if (row.data === null) return { seq, at: row.at, kind, run, text: row.text };
  const data = typeof row.data === 'string' ? JSON.parse(row.data) as Record<string, unknown> : row.data;
  return { ...data, seq, at: row.at, kind, run, text: row.text };
}

/**
 * How many entries one search reads at most, from `after` on: a search that matches nothing must not read a whole
 * 64 MiB transcript per request (a review of issue 35 §1); the reader goes on from `after + SEARCH_WINDOW`.
 */
export const SEARCH_WINDOW = 5000;

/**
 * Entries after `after`, at most `limit`, in seq order; with `search`, only those whose text contains it (any case),
 * among the SEARCH_WINDOW entries after `after`. The primary key (org, session, seq) serves the read: one index range
 * scan whatever the transcript's length.
 */
export async function readTranscript(
  db: Knex, orgId: string, sessionKey: string, after: number, limit: number, search?: string,
): Promise<TranscriptEntry[]> {
  const rows = search === undefined || search === ''
    ? await sqlQuery<EntryRow>(db,
      `select seq, ${AT_ISO}, kind, run, text, data from session_transcript_entries
        where org_id = $1 and session_id = $2 and seq > $3 order by seq limit $4`, [orgId, sessionKey, after, limit])
    : await sqlQuery<EntryRow>(db,
      `select seq, ${AT_ISO}, kind, run, text, data from session_transcript_entries
        where org_id = $1 and session_id = $2 and seq > $3 and seq <= $6 and strpos(lower(text), lower($5)) > 0 order by seq limit $4`,
      [orgId, sessionKey, after, limit, search, after + SEARCH_WINDOW]);
  return rows.map(entryOf);
}

/** Every entry after `after`, a page at a time (for a download): at most one page is held at once. */
export async function* transcriptPages(db: Knex, orgId: string, sessionKey: string, after = 0, pageSize = 1000): AsyncGenerator<TranscriptEntry[]> {
  let cursor = after;
  for (;;) {
    const page = await readTranscript(db, orgId, sessionKey, cursor, pageSize);
    if (page.length === 0) return;
    yield page;
    if (page.length < pageSize) return;
    cursor = page[page.length - 1]!.seq;
  }
}
