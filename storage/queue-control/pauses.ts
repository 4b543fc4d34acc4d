import type { Knex } from 'knex';
import { toMutation } from '../sessions/daemon.js';

/**
 * Paused project queues and paused workers (migration 0050, decision 0079). A pause is a row; resuming deletes it.
 * Every read and write is scoped by org, so another org's project or worker is simply not paused here. Each change
 * runs its audit entry in its own transaction, and only a change that happened is audited: pausing what is paused
 * (or resuming what runs) answers the state as it is and writes nothing.
 */
export interface Pause {
  readonly pausedAt: string;
  readonly pausedBy: string;
}

/** What a pause or resume did: the state after it, and whether it changed anything. */
export interface PauseChange {
  readonly pause: Pause | null;
  readonly changed: boolean;
}

/** The audit entry of a change, written in the change's transaction. */
export type AuditIn = (trx: Knex.Transaction) => Promise<void>;

type Row = Record<string, unknown>;

const iso = (v: unknown): string => (v instanceof Date ? v : new Date(String(v))).toISOString();
const pauseOf = (r: Row | undefined): Pause | null => (r === undefined ? null : { pausedAt: iso(r.paused_at), pausedBy: String(r.paused_by) });

/** The two kinds of pause differ only in their table and key column. */
interface PauseTable {
  readonly table: 'project_queue_pauses' | 'worker_pauses';
  readonly key: 'project_id' | 'worker_id';
}
const PROJECT_QUEUES: PauseTable = { table: 'project_queue_pauses', key: 'project_id' };
const WORKERS: PauseTable = { table: 'worker_pauses', key: 'worker_id' };

async function pause(db: Knex, t: PauseTable, orgId: string, id: string, by: string, at: Date, audit: AuditIn): Promise<PauseChange> {
  return db.transaction(async (trx) => {
    const inserted = await trx(t.table).insert({ [t.key]: id, org_id: orgId, paused_at: at, paused_by: by })
      .onConflict(t.key).ignore().returning('*') as Row[];
    if (inserted.length > 0) {
      await audit(trx);
      return { pause: pauseOf(inserted[0]), changed: true };
    }
    return { pause: pauseOf(await trx(t.table).where({ [t.key]: id, org_id: orgId }).first() as Row | undefined), changed: false };
  });
}

async function resume(db: Knex, t: PauseTable, orgId: string, id: string, audit: AuditIn): Promise<PauseChange> {
  return db.transaction(async (trx) => {
    // `returning` rather than the affected-row count, which PGlite does not report for DELETE.
    const removed = await trx(t.table).where({ [t.key]: id, org_id: orgId }).delete().returning(t.key) as Row[];
    if (removed.length > 0) await audit(trx);
    return { pause: null, changed: removed.length > 0 };
  });
}

async function find(db: Knex, t: PauseTable, orgId: string, id: string): Promise<Pause | null> {
  return pauseOf(await db(t.table).where({ [t.key]: id, org_id: orgId }).first('paused_at', 'paused_by') as Row | undefined);
}

/** The caller has checked that the project is the org's. */
export const pauseProjectQueue = (db: Knex, orgId: string, projectId: string, by: string, at: Date, audit: AuditIn): Promise<PauseChange> =>
  pause(db, PROJECT_QUEUES, orgId, projectId, by, at, audit);
export const resumeProjectQueue = (db: Knex, orgId: string, projectId: string, audit: AuditIn): Promise<PauseChange> =>
  resume(db, PROJECT_QUEUES, orgId, projectId, audit);

/** The caller has checked that the worker is the org's. */
export const pauseWorker = (db: Knex, orgId: string, workerId: string, by: string, at: Date, audit: AuditIn): Promise<PauseChange> =>
  pause(db, WORKERS, orgId, workerId, by, at, audit);
export const resumeWorker = (db: Knex, orgId: string, workerId: string, audit: AuditIn): Promise<PauseChange> =>
  resume(db, WORKERS, orgId, workerId, audit);

/** A project's queue as `GET /api/projects/{projectId}/queue` shows it: its pause and how many sessions wait. */
export async function projectQueue(db: Knex, orgId: string, projectId: string): Promise<{ pause: Pause | null; pending: number }> {
  const [paused, pending] = await Promise.all([
    find(db, PROJECT_QUEUES, orgId, projectId),
    db('sessions').where({ org_id: orgId, project_id: projectId, status: 'pending' }).first(db.raw('count(*)::int as n')),
  ]);
  return { pause: paused, pending: Number((pending as Row | undefined)?.n ?? 0) };
}

/** Paused project queues of the org, oldest pause first (fleet statistics). */
export async function pausedProjectQueues(db: Knex, orgId: string): Promise<Array<Pause & { projectId: string }>> {
  const rows = await db(PROJECT_QUEUES.table).where({ org_id: orgId }).orderBy([{ column: 'paused_at' }, { column: 'project_id' }])
    .select('project_id', 'paused_at', 'paused_by') as Row[];
  return rows.map((r) => ({ projectId: String(r.project_id), ...pauseOf(r)! }));
}

/** Paused workers of the org by id (the worker listing). */
export async function pausedWorkers(db: Knex, orgId: string): Promise<Map<string, Pause>> {
  const rows = await db(WORKERS.table).where({ org_id: orgId }).select('worker_id', 'paused_at', 'paused_by') as Row[];
  return new Map(rows.map((r) => [String(r.worker_id), pauseOf(r)!]));
}

/** What a node's worker streams must not push offers to in one org: one statement over both tables. */
export async function offerPausesOf(db: Knex, orgId: string): Promise<{ projects: Set<string>; workers: Set<string>; limitedProjects: Set<string> }> {
  const rows = await db.unionAll([
    db(PROJECT_QUEUES.table).where({ org_id: orgId }).select(db.raw(`'project' as kind`), db.raw('project_id::text as id')),
    db(WORKERS.table).where({ org_id: orgId }).select(db.raw(`'worker' as kind`), 'worker_id as id'),
    // Not a pause, but read with them: a keyed session of these projects is left to the poll (decision 0081).
    db('project_concurrency').where({ org_id: orgId }).select(db.raw(`'limited' as kind`), db.raw('project_id::text as id')),
  ], true) as Row[];
  const sets = { project: new Set<string>(), worker: new Set<string>(), limited: new Set<string>() };
  for (const r of rows) sets[r.kind as keyof typeof sets]?.add(String(r.id));
  return { projects: sets.project, workers: sets.worker, limitedProjects: sets.limited };
}

/** The worker's `worker.drain` mutation that no heartbeat has taken yet, if any: a second drain request answers it. */
export async function pendingDrainOf(db: Knex, orgId: string, workerId: string): Promise<Record<string, unknown> | undefined> {
  const row = await db('daemon_mutations').where({ org_id: orgId, worker_host_id: workerId, op: 'worker.drain', status: 'pending' })
    .orderBy('created_at', 'desc').first() as Row | undefined;
  return row === undefined ? undefined : toMutation(row);
}
