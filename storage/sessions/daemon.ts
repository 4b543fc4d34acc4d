import type { Knex } from 'knex';
import { dbKind } from '../db.js';

/**
 * Read models of the daemon-host actor (workers and their mutation history) and the batched liveness writer's
 * one statement. Queries are scoped by org; the worker-id lookups used by daemon calls are scoped by the org in
 * the worker's verified token.
 */

type Row = Record<string, unknown>;
const iso = (v: unknown): string | undefined => (v === null || v === undefined ? undefined : new Date(v as string).toISOString());

export interface WorkerRow {
  readonly id: string;
  readonly orgId: string;
  readonly registrationId: string;
  readonly hostname: string;
  readonly maxAgents: number;
  readonly projectIds: readonly string[];
  readonly registeredAt: number;
}

export async function upsertWorker(trx: Knex, w: WorkerRow): Promise<void> {
  const row = {
    org_id: w.orgId, registration_id: w.registrationId, hostname: w.hostname, max_agents: w.maxAgents,
    project_ids: JSON.stringify(w.projectIds),
  };
  await trx('daemon_workers')
    .insert({ id: w.id, ...row, registered_at: new Date(w.registeredAt), last_seen_at: new Date(w.registeredAt) })
    .onConflict('id').merge(row);
}

export async function workerInOrg(db: Knex, orgId: string, workerId: string): Promise<boolean> {
  return (await db('daemon_workers').where({ id: workerId, org_id: orgId }).first('id')) !== undefined;
}

export async function insertMutation(trx: Knex, m: {
  id: string; orgId: string; workerHostId: string; requestedBy: string; op: string; params: unknown; createdAt: number;
}): Promise<void> {
  await trx('daemon_mutations').insert({
    id: m.id, org_id: m.orgId, worker_host_id: m.workerHostId, requested_by: m.requestedBy, op: m.op,
    params: JSON.stringify(m.params), status: 'pending', created_at: new Date(m.createdAt),
  }).onConflict('id').ignore();
}

export async function markMutationsDelivered(trx: Knex, ids: readonly string[], at: number): Promise<void> {
  if (ids.length === 0) return;
  await trx('daemon_mutations').whereIn('id', [...ids]).where({ status: 'pending' }).update({ status: 'delivered', delivered_at: new Date(at) });
}

export async function markMutationCancelled(trx: Knex, id: string, at: number): Promise<void> {
  await trx('daemon_mutations').where({ id, status: 'pending' }).update({ status: 'cancelled', cancelled_at: new Date(at) });
}

export function toMutation(r: Row): Record<string, unknown> {
  const params = typeof r.params === 'string' ? JSON.parse(r.params) : r.params;
  return {
    id: r.id, orgId: r.org_id, workerHostId: r.worker_host_id, requestedBy: r.requested_by, op: r.op, params,
    status: r.status, createdAt: iso(r.created_at),
    ...(r.delivered_at ? { deliveredAt: iso(r.delivered_at) } : {}),
    ...(r.cancelled_at ? { cancelledAt: iso(r.cancelled_at) } : {}),
  };
}

export async function findMutation(db: Knex, orgId: string, id: string): Promise<Record<string, unknown> | undefined> {
  const row = await db('daemon_mutations').where({ id, org_id: orgId }).first();
  return row ? toMutation(row) : undefined;
}

export const MUTATION_HISTORY_LIMIT = 200;

export async function mutationHistory(db: Knex, orgId: string, workerHostId: string): Promise<Record<string, unknown>[]> {
  const rows = await db('daemon_mutations').where({ org_id: orgId, worker_host_id: workerHostId })
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(MUTATION_HISTORY_LIMIT);
  return rows.map(toMutation);
}

/** Workers with at least one pending mutation, and how many: seeds a node's in-memory pending index. */
export async function pendingMutationCounts(db: Knex, workerIds?: readonly string[]): Promise<Map<string, number>> {
  const q = db('daemon_mutations').where({ status: 'pending' }).groupBy('worker_host_id').select('worker_host_id').count({ n: '*' });
  if (workerIds) q.whereIn('worker_host_id', [...workerIds]);
  const rows = await q;
  return new Map(rows.map((r: Row) => [r.worker_host_id as string, Number(r.n)]));
}

/**
 * The batched liveness write. A worker's `last_seen_at` is kept to the second, rounded down (never later than the
 * heartbeat it records; the writer's resolution already leaves it up to 10 s behind), and only moves forward.
 *
 * On Postgres: one statement per chunk, keys sorted and rows locked in that order, so concurrent writers on several
 * nodes never deadlock (PERFORMANCE.md: "concurrent unsorted batches deadlock"). The locking subquery is the update's
 * join source, not a filter (`id in (select … from locked)`): as a filter the planner joined it by a nested loop over
 * the CTE, comparing every row with every locked row (n² per batch, 0.5 s for 1,000 rows). Only `last_seen_at`
 * changes and no index covers it (migration 0016), so the update is HOT: no index is written. `chunkRows` splits a
 * large batch into statements of that many rows (each sorted, each its own transaction, so chunking cannot deadlock
 * either).
 *
 * On the embedded engine the statement runs on this thread, so its CPU is taken from requests (G3): there the rows of
 * one second share one statement with a single timestamp, which spares parsing a timestamp per row (22.9 → 14.4 µs a
 * row in a node, decision 0061), and nothing is locked in order, as the one connection has no other writer to wait for.
 */
export async function writeLiveness(db: Knex, batch: ReadonlyMap<string, number>, options: { chunkRows?: number } = {}): Promise<void> {
  if (batch.size === 0) return;
  const chunkRows = Math.max(1, options.chunkRows ?? batch.size);
  if (dbKind(db) === 'pglite') {
    await writeLivenessBySecond(db, batch, chunkRows);
    return;
  }
  const ids = [...batch.keys()].sort();
  for (let from = 0; from < ids.length; from += chunkRows) {
    const chunk = ids.slice(from, from + chunkRows);
    const at = chunk.map((id) => new Date(toSecond(batch.get(id)!)).toISOString());
    await db.raw(UPDATE_LIVENESS_IN_KEY_ORDER, [chunk, at]);
  }
}

const toSecond = (ms: number): number => Math.floor(ms / 1000) * 1000;

async function writeLivenessBySecond(db: Knex, batch: ReadonlyMap<string, number>, chunkRows: number): Promise<void> {
  const bySecond = new Map<number, string[]>();
  for (const [id, at] of batch) {
    const second = toSecond(at);
    const ids = bySecond.get(second);
    if (ids) ids.push(id);
    else bySecond.set(second, [id]);
  }
  // The embedded client lets the event loop turn before each statement (storage/db.ts), so requests run between
  // chunks: one statement for a whole flush held every request behind it (the heartbeat's p99).
  for (const [second, ids] of bySecond) {
    const at = new Date(second).toISOString();
    for (let from = 0; from < ids.length; from += chunkRows) await db.raw(UPDATE_LIVENESS_AT, [at, ids.slice(from, from + chunkRows), at]);
  }
}

const UPDATE_LIVENESS_IN_KEY_ORDER = `update daemon_workers w set last_seen_at = v.at
   from (select d.id, t.at from unnest(?::text[], ?::timestamptz[]) as t(id, at)
           join daemon_workers d on d.id = t.id order by d.id for update of d) v
  where w.id = v.id and w.last_seen_at < v.at`;
const UPDATE_LIVENESS_AT = `update daemon_workers set last_seen_at = ?::timestamptz
  where id = any(?::text[]) and last_seen_at < ?::timestamptz`;
