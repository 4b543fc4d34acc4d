import type { Knex } from 'knex';

/**
 * The kept tail of a session's agent output (decision 0022, migration 0032): the last `MAX_OUTPUT_TAIL_BYTES` of
 * UTF-8 its worker relayed for the current run. Appends come only from the worker holding the session, with its
 * transcript entries (`output-relay.ts`), serialised per session by a row lock so two appends never lose each other's text.
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
