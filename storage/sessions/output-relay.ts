import type { Knex } from 'knex';
import { inSqlTransaction, sqlQuery, type SqlTx } from '../sql-tx.js';
import { lastUtf8Bytes, MAX_OUTPUT_TAIL_BYTES, type OutputAppended } from './output.js';
import { appendTranscriptIn, type Appended } from './transcript.js';
import { kindCode, storableText } from './transcript-kinds.js';

/**
 * A batch of agent output from the worker holding the session, written once (decision 0090): to the kept tail of the
 * detail and to the whole transcript, in one statement. A worker's relay numbers the chunks of one claim (`relay.id`,
 * `relay.firstChunk`); a retried batch whose first try committed finds its chunks counted in the tail's row and adds
 * only those after them, to the tail, the transcript and the live stream alike. Without `relay` (an older worker) a
 * batch is taken as new, as before.
 *
 * The usual batch is one statement: the tail's upsert checks the holder, counts the repeats and locks the row (so a
 * retry racing its first try waits and then sees its count), and the transcript's head and entries are written from
 * what it returned. It runs only when the transcript's head exists and has room for the whole batch; otherwise (the
 * session's first output before any status entry, or the cap) the same writes go in a transaction, where the cap is
 * applied an entry at a time.
 */
export interface OutputRelayBatch {
  readonly orgId: string;
  readonly sessionKey: string;
  readonly workerId: string;
  /** Lines of the agent's stdout, each with its newline. */
  readonly chunks: readonly string[];
  readonly relay?: { readonly id: string; readonly firstChunk: number };
  readonly capBytes: number | null;
  readonly now: number;
}

export interface OutputRelayed extends OutputAppended {
  /** Chunks at the start of the batch that an earlier try had already written. */
  readonly repeats: number;
  /** The transcript entries the batch added, when it added any. */
  readonly transcript?: Appended;
}

const TAIL = MAX_OUTPUT_TAIL_BYTES;
const OUTPUT = kindCode('output');

/** $1 org, $2 session, $3 worker, $4 chunks, $5 relay id, $6 first chunk, $7 now. */
const REPEATS = `case when o.epoch = excluded.epoch and $5::text is not null and o.relay_id = $5::text
  then greatest(0, least(cardinality($4::text[]), o.relay_chunks - $6::bigint)) else 0 end`;

const tailUpsert = (gate: string): string => `insert into session_output as o
    (session_id, org_id, epoch, tail, total_bytes, relay_id, relay_chunks, repeat_chunks, updated_at)
  select s.id, s.org_id, s.epoch, right(array_to_string($4::text[], ''), ${TAIL}), octet_length(array_to_string($4::text[], '')),
         $5::text, coalesce($6::bigint, 0) + cardinality($4::text[]), 0, $7::timestamptz
    from sessions s where s.id = $2 and s.org_id = $1 and s.worker_id = $3 ${gate}
  on conflict (session_id) do update set
    tail = case when o.epoch = excluded.epoch
                then right(o.tail || array_to_string(($4::text[])[${REPEATS} + 1:], ''), ${TAIL}) else excluded.tail end,
    total_bytes = case when o.epoch = excluded.epoch
                then o.total_bytes + octet_length(array_to_string(($4::text[])[${REPEATS} + 1:], '')) else excluded.total_bytes end,
    relay_chunks = case when o.epoch = excluded.epoch and o.relay_id = $5::text
                then greatest(o.relay_chunks, excluded.relay_chunks) else excluded.relay_chunks end,
    repeat_chunks = ${REPEATS},
    relay_id = excluded.relay_id, epoch = excluded.epoch, updated_at = excluded.updated_at
  returning octet_length(tail) as kept_bytes, total_bytes, epoch, repeat_chunks`;

/** $8 cap bytes, $9 the batch's bytes. An entry is its chunk without the newline; the chunks go to the database once. */
const RELAY_FAST = `with tail as (${tailUpsert(`and exists (select from session_transcript_heads
      where org_id = $1 and session_id = $2 and ($8::bigint is null or (cut_seq is null and bytes + $9::bigint <= $8::bigint)))`)}),
  fresh as (
    select case when right(v.chunk, 1) = chr(10) then left(v.chunk, -1) else v.chunk end as text, v.ord - t.repeat_chunks as n
      from tail t cross join unnest($4::text[]) with ordinality as v(chunk, ord)
     where v.ord > t.repeat_chunks
  ),
  h as (
    update session_transcript_heads
       set last_seq = last_seq + (select count(*) from fresh), bytes = bytes + (select coalesce(sum(octet_length(text)), 0) from fresh), updated_at = $7
     where org_id = $1 and session_id = $2 and exists (select from tail)
    returning last_seq - (select count(*) from fresh) as base, run
  ),
  ins as (
    insert into session_transcript_entries (org_id, session_id, seq, at, kind, run, text, data)
    select $1, $2, h.base + f.n, $7, ${OUTPUT}, h.run, f.text, null from h cross join fresh f
    returning seq
  )
  select t.kept_bytes, t.total_bytes, t.epoch, t.repeat_chunks, (select min(seq) from ins) as first_seq, (select max(seq) from ins) as last_seq
    from tail t`;

interface RelayRow { kept_bytes: number; total_bytes: string; epoch: number; repeat_chunks: number; first_seq?: string | null; last_seq?: string | null }

/** Undefined when `workerId` does not hold the session (another worker's, ended, reclaimed, or absent). */
export async function relayOutput(db: Knex, b: OutputRelayBatch): Promise<OutputRelayed | undefined> {
  const chunks = b.chunks.map(storableText);
  const tailValues = [b.orgId, b.sessionKey, b.workerId, chunks, b.relay?.id ?? null, b.relay?.firstChunk ?? null, new Date(b.now)];
  const batchBytes = chunks.reduce((n, c) => n + Buffer.byteLength(c, 'utf8'), 0);
  const fast = (await sqlQuery<RelayRow>(db, RELAY_FAST, [...tailValues, b.capBytes, batchBytes]))[0];
  const relayed = fast !== undefined
    ? outcome(fast, fast.first_seq == null ? undefined : { first: Number(fast.first_seq), last: Number(fast.last_seq) })
    : await inSqlTransaction(db, (tx) => relaySlow(tx, b, tailValues, chunks.map((c) => (c.endsWith('\n') ? c.slice(0, -1) : c))));
  if (relayed !== undefined && relayed.keptBytes > TAIL) return { ...relayed, keptBytes: await cutTailToBytes(db, b.sessionKey, fast?.epoch) };
  return relayed;
}

async function relaySlow(tx: SqlTx, b: OutputRelayBatch, tailValues: readonly unknown[], texts: readonly string[]): Promise<OutputRelayed | undefined> {
  const row = (await tx.query<RelayRow>(tailUpsert(''), tailValues)).rows[0];
  if (row === undefined) return undefined;
  const at = new Date(b.now);
  const fresh = texts.slice(row.repeat_chunks).map((text) => ({ kind: 'output' as const, text, at }));
  const appended = fresh.length > 0 ? await appendTranscriptIn(tx, b.orgId, b.sessionKey, fresh, b.capBytes, at) : undefined;
  return outcome(row, appended);
}

const outcome = (row: RelayRow, transcript: Appended | undefined): OutputRelayed => ({
  keptBytes: Number(row.kept_bytes), totalBytes: Number(row.total_bytes), repeats: Number(row.repeat_chunks), ...(transcript ? { transcript } : {}),
});

/**
 * The tail keeps the last 65,536 characters; only when those are more than 64 KiB of UTF-8 (multi-byte text) is it
 * cut again at a character boundary. A worker sends one batch at a time per session, so nothing runs in between.
 */
async function cutTailToBytes(db: Knex, sessionKey: string, epoch: number | undefined): Promise<number> {
  const stored = await db('session_output').where({ session_id: sessionKey, ...(epoch === undefined ? {} : { epoch }) }).first('tail');
  const tail = lastUtf8Bytes(stored.tail as string, TAIL);
  await db('session_output').where({ session_id: sessionKey }).update({ tail });
  return Buffer.byteLength(tail, 'utf8');
}
