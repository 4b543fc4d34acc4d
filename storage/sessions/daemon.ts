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
 * The batched liveness write: one statement per batch, keys sorted and, on Postgres, rows locked in that order, so
 * concurrent writers on several nodes never deadlock (PERFORMANCE.md: "concurrent unsorted batches deadlock"). A timestamp
 * only moves forward.
 *
 * The locking subquery is the update's join source, not a filter (`id in (select … from locked)`): as a filter the
 * planner joined it by a nested loop over the CTE, comparing every row with every locked row (n² per batch, 0.5 s
 * for 1,000 rows, which also blocked the embedded engine's event loop). Only `last_seen_at` changes and no index
 * covers it (migration 0016), so the update is HOT: no index is written. `chunkRows` splits a large batch into
 * statements of that many rows (each sorted, each its own transaction, so chunking cannot deadlock either).
 */
export async function writeLiveness(db: Knex, batch: ReadonlyMap<string, number>, options: { chunkRows?: number } = {}): Promise<void> {
  if (batch.size === 0) return;
  const ids = [...batch.keys()].sort();
  const chunkRows = Math.max(1, options.chunkRows ?? ids.length);
  // The embedded engine has one connection, so no other writer can hold a row this statement waits for: the lock
  // in key order (a sort and a second pass over the rows) buys nothing there and was a third of the flush's CPU.
  const statement = dbKind(db) === 'pglite' ? UPDATE_LIVENESS : UPDATE_LIVENESS_IN_KEY_ORDER;
  for (let from = 0; from < ids.length; from += chunkRows) {
    // Between chunks the event loop runs: on the embedded engine a statement runs on this very thread, and one
    // statement for a whole flush held every request behind it (the heartbeat's p99).
    if (from > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const chunk = ids.slice(from, from + chunkRows);
    const at = chunk.map((id) => new Date(batch.get(id)!).toISOString());
    await db.raw(statement, [chunk, at]);
  }
}

const UPDATE_LIVENESS_IN_KEY_ORDER = `update daemon_workers w set last_seen_at = v.at
   from (select d.id, t.at from unnest(?::text[], ?::timestamptz[]) as t(id, at)
           join daemon_workers d on d.id = t.id order by d.id for update of d) v
  where w.id = v.id and w.last_seen_at < v.at`;
const UPDATE_LIVENESS = `update daemon_workers w set last_seen_at = t.at
   from unnest(?::text[], ?::timestamptz[]) as t(id, at)
  where w.id = t.id and w.last_seen_at < t.at`;
