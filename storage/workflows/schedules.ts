import type { Knex } from 'knex';
import { withStorageErrors } from '../storage-errors.js';
import { isUuid } from './workflows.js';

/**
 * Schedule read models (migration 0040), written by the schedule actor in its snapshot transaction:
 * `workflow_schedules` (one row per schedule) and `workflow_schedule_fires` (one row per fire, keyed by its time).
 */
export interface ScheduleRow {
  readonly workflowId: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly appliedVersion: number;
  readonly status: 'active' | 'ended';
  readonly version: number | null;
  readonly cron: string | null;
  readonly timezone: string | null;
  readonly overlap: string | null;
  readonly catchupWindowSeconds: number | null;
  readonly nextFireAt: number | null;
  readonly pendingFireAt: number | null;
  readonly lastRunId: string | null;
  /** Set while the schedule is paused (migration 0050). */
  readonly pausedAt: number | null;
  readonly pausedBy: string | null;
  readonly updatedAt: number;
}

export type FireOutcome = 'starting' | 'started' | 'skipped-overlap' | 'skipped-missed' | 'skipped-paused' | 'failed';

export interface FireRow {
  readonly fireTime: number;
  readonly version: number;
  readonly outcome: FireOutcome;
  readonly runId: string | null;
  readonly detail: string | null;
}

const ts = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));
const ms = (v: unknown): number | null => (v === null || v === undefined ? null : new Date(v as string).getTime());

export async function writeSchedule(trx: Knex.Transaction, s: ScheduleRow): Promise<void> {
  const row = {
    org_id: s.orgId, project_id: s.projectId, applied_version: s.appliedVersion, status: s.status, version: s.version, cron: s.cron,
    timezone: s.timezone, overlap: s.overlap, catchup_window_seconds: s.catchupWindowSeconds, next_fire_at: ts(s.nextFireAt),
    pending_fire_at: ts(s.pendingFireAt), last_run_id: s.lastRunId, paused_at: ts(s.pausedAt), paused_by: s.pausedBy,
    updated_at: new Date(s.updatedAt),
  };
  await trx('workflow_schedules').insert({ workflow_id: s.workflowId, ...row }).onConflict('workflow_id').merge(row);
}

/** Records fires; a fire recorded again (its outcome learnt) keeps its key and takes the newer outcome. */
export async function writeFires(trx: Knex.Transaction, workflowId: string, orgId: string, fires: readonly FireRow[], at: Date): Promise<void> {
  if (fires.length === 0) return;
  const rows = fires.map((f) => ({
    workflow_id: workflowId, org_id: orgId, fire_time: new Date(f.fireTime), version: f.version, outcome: f.outcome,
    run_id: f.runId, detail: f.detail, recorded_at: at,
  }));
  await trx('workflow_schedule_fires').insert(rows).onConflict(['workflow_id', 'fire_time']).merge(['outcome', 'run_id', 'detail', 'recorded_at']);
}

export async function findSchedule(db: Knex, orgId: string, workflowId: string): Promise<ScheduleRow | undefined> {
  if (!isUuid(workflowId)) return undefined;
  const r = await withStorageErrors(() => db('workflow_schedules').where({ org_id: orgId, workflow_id: workflowId }).first());
  return r ? toSchedule(r) : undefined;
}

function toSchedule(r: Record<string, any>): ScheduleRow {
  return {
    workflowId: r.workflow_id, orgId: r.org_id, projectId: r.project_id, appliedVersion: Number(r.applied_version), status: r.status,
    version: r.version === null ? null : Number(r.version), cron: r.cron, timezone: r.timezone, overlap: r.overlap,
    catchupWindowSeconds: r.catchup_window_seconds === null ? null : Number(r.catchup_window_seconds),
    nextFireAt: ms(r.next_fire_at), pendingFireAt: ms(r.pending_fire_at), lastRunId: r.last_run_id ?? null,
    pausedAt: ms(r.paused_at), pausedBy: r.paused_by ?? null, updatedAt: ms(r.updated_at) ?? 0,
  };
}

export interface FireWithRun extends FireRow {
  readonly runStatus: string | null;
}

/** The newest fires of a schedule, each with the status its run has now. */
export async function recentFires(db: Knex, orgId: string, workflowId: string, limit: number): Promise<FireWithRun[]> {
  if (!isUuid(workflowId)) return [];
  const rows = await withStorageErrors(() => db('workflow_schedule_fires as f')
    .leftJoin('workflow_runs as r', (j) => j.on('r.id', 'f.run_id').andOn('r.org_id', 'f.org_id'))
    .where({ 'f.org_id': orgId, 'f.workflow_id': workflowId })
    .orderBy('f.fire_time', 'desc').limit(limit)
    .select('f.fire_time', 'f.version', 'f.outcome', 'f.run_id', 'f.detail', 'r.status as run_status'));
  return rows.map((r: Record<string, any>) => ({
    fireTime: ms(r.fire_time)!, version: Number(r.version), outcome: r.outcome, runId: r.run_id ?? null, detail: r.detail ?? null,
    runStatus: r.run_status ?? null,
  }));
}

/**
 * Schedules that need a tick: an active one with a fire due by `dueBy` that nobody acted on (its owner died, or its
 * timer was on a node that stopped), or one whose fire's run start has not been confirmed since `staleBefore`.
 */
export async function schedulesNeedingTick(db: Knex, dueBy: Date, staleBefore: Date, limit: number): Promise<string[]> {
  const rows = await withStorageErrors(() => db('workflow_schedules')
    .where((due) => due.where({ status: 'active' }).andWhere('next_fire_at', '<=', dueBy))
    .orWhere((p) => p.whereNotNull('pending_fire_at').andWhere('updated_at', '<=', staleBefore))
    .orderBy('next_fire_at').limit(limit).select('workflow_id'));
  return rows.map((r: { workflow_id: string }) => r.workflow_id);
}
