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
 */
export async function appendSessionOutput(
  db: Knex, orgId: string, sessionId: string, workerId: string, text: string, now: number,
): Promise<OutputAppended | undefined> {
  // Postgres text cannot hold NUL; an agent printing one still has the rest of its line kept.
  const clean = text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
  return db.transaction(async (trx) => {
    const session = await trx('sessions').where({ id: sessionId, org_id: orgId, worker_id: workerId }).first('epoch');
    if (!session) return undefined;
    const epoch = Number(session.epoch);
    const at = new Date(now);
    await trx('session_output').insert({ session_id: sessionId, org_id: orgId, epoch, tail: '', total_bytes: 0, updated_at: at })
      .onConflict('session_id').ignore();
    const row = await trx('session_output').where({ session_id: sessionId }).forUpdate().first('epoch', 'tail', 'total_bytes');
    const sameRun = Number(row.epoch) === epoch;
    const tail = lastUtf8Bytes((sameRun ? row.tail as string : '') + clean, MAX_OUTPUT_TAIL_BYTES);
    const totalBytes = (sameRun ? Number(row.total_bytes) : 0) + Buffer.byteLength(clean, 'utf8');
    await trx('session_output').where({ session_id: sessionId }).update({ epoch, tail, total_bytes: totalBytes, updated_at: at });
    return { keptBytes: Buffer.byteLength(tail, 'utf8'), totalBytes };
  });
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

/** Sessions a worker holds (claimed, running, paused or finalizing), for the worker's reconciliation. */
export async function sessionsHeldBy(db: Knex, orgId: string, workerId: string): Promise<{ id: string; status: string; run: number }[]> {
  const rows = await db('sessions').where({ org_id: orgId, worker_id: workerId })
    .whereIn('status', ['claimed', 'running', 'paused', 'finalizing']).orderBy('id').limit(10_000).select('id', 'status', 'epoch');
  return rows.map((r: Record<string, unknown>) => ({ id: r.id as string, status: r.status as string, run: Number(r.epoch) }));
}
