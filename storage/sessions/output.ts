import type { Knex } from 'knex';

/**
 * The kept tail of a session's agent output (decision 0022, migration 0032): the last `MAX_OUTPUT_TAIL_BYTES` of
 * UTF-8 its worker relayed for the current run. Appends come only from the worker holding the session (scoped in
 * SQL), serialised per session by a row lock so two appends never lose each other's text.
 */
export const MAX_OUTPUT_TAIL_BYTES = 64 * 1024;

/** The last `max` bytes of `text` as UTF-8, cut at a character boundary (never half a character). */
export function lastUtf8Bytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString('utf8');
}

export interface OutputAppended {
  readonly keptBytes: number;
  readonly totalBytes: number;
}

/**
 * Appends `text` to the session's tail when `workerId` holds the session in `orgId`; undefined when it does not
 * (another worker's, ended, reclaimed, or absent), so the caller can tell the worker to stop relaying.
 *
 * One statement: the holder check, the run check and the append are a single upsert (an agent's output arrives up
 * to ten times a second per session, so a transaction of several statements would be most of the node's work). It
 * keeps the last 65,536 characters; only when those are more than 64 KiB of UTF-8 (multi-byte text) does a second
 * statement cut the tail to 64 KiB at a character boundary. A worker sends one append at a time per session, so
 * nothing runs between the two.
 */
export async function appendSessionOutput(
  db: Knex, orgId: string, sessionId: string, workerId: string, text: string, now: number,
): Promise<OutputAppended | undefined> {
  // Postgres text cannot hold NUL; an agent printing one still has the rest of its line kept.
  const clean = text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
  const result = await db.raw(
    `insert into session_output (session_id, org_id, epoch, tail, total_bytes, updated_at)
     select s.id, s.org_id, s.epoch, right(?::text, ${MAX_OUTPUT_TAIL_BYTES}), ?::bigint, ?::timestamptz
       from sessions s where s.id = ? and s.org_id = ? and s.worker_id = ?
     on conflict (session_id) do update set
       tail = case when session_output.epoch = excluded.epoch
                   then right(session_output.tail || excluded.tail, ${MAX_OUTPUT_TAIL_BYTES}) else excluded.tail end,
       total_bytes = case when session_output.epoch = excluded.epoch
                   then session_output.total_bytes + excluded.total_bytes else excluded.total_bytes end,
       epoch = excluded.epoch, updated_at = excluded.updated_at
     returning octet_length(tail) as kept_bytes, total_bytes, epoch`,
    [clean, Buffer.byteLength(clean, 'utf8'), new Date(now).toISOString(), sessionId, orgId, workerId],
  );
  const row = (result.rows as Record<string, unknown>[])[0];
  if (!row) return undefined;
  let keptBytes = Number(row.kept_bytes);
  if (keptBytes > MAX_OUTPUT_TAIL_BYTES) {
    const stored = await db('session_output').where({ session_id: sessionId, epoch: row.epoch }).first('tail');
    const tail = lastUtf8Bytes(stored.tail as string, MAX_OUTPUT_TAIL_BYTES);
    await db('session_output').where({ session_id: sessionId, epoch: row.epoch }).update({ tail });
    keptBytes = Buffer.byteLength(tail, 'utf8');
  }
  return { keptBytes, totalBytes: Number(row.total_bytes) };
}

export interface SessionOutput {
  /** The last 64 KiB of the current run's output. */
  readonly tail: string;
  readonly totalBytes: number;
  /** True when earlier output of the run was dropped from the tail. */
  readonly truncated: boolean;
  readonly updatedAt: string;
}

/** The current run's kept output, or null when its agent has printed nothing yet. */
export async function sessionOutput(db: Knex, orgId: string, sessionId: string, epoch: number): Promise<SessionOutput | null> {
  const row = await db('session_output').where({ session_id: sessionId, org_id: orgId, epoch }).first('tail', 'total_bytes', 'updated_at');
  if (!row) return null;
  const tail = row.tail as string;
  const totalBytes = Number(row.total_bytes);
  return { tail, totalBytes, truncated: totalBytes > Buffer.byteLength(tail, 'utf8'), updatedAt: new Date(row.updated_at as string).toISOString() };
}

/**
 * Sessions a worker holds (claimed, running, paused or finalizing), for the worker's reconciliation: each under its
 * public id and under its key, so a worker that took a session before public ids were shown (and knows it by its key)
 * does not end it as unlisted after the upgrade (decision 0068).
 */
export async function sessionsHeldBy(db: Knex, orgId: string, workerId: string): Promise<{ id: string; status: string; run: number }[]> {
  const rows = await db('sessions').where({ org_id: orgId, worker_id: workerId })
    .whereIn('status', ['claimed', 'running', 'paused', 'finalizing']).orderBy('id').limit(10_000).select('id', 'public_id', 'status', 'epoch');
  return rows.flatMap((r: Record<string, unknown>) => {
    const held = { status: r.status as string, run: Number(r.epoch) };
    return [{ id: r.public_id as string, ...held }, ...(r.id === r.public_id ? [] : [{ id: r.id as string, ...held }])];
  });
}
