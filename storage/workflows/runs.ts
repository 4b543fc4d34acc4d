import type { Knex } from 'knex';
import { withStorageErrors } from '../storage-errors.js';
import { isUuid } from './workflows.js';
import type { GateRecord } from '../../schemas/workflows/approval-gate.js';

/** Read models of workflow runs and approval gates, projected by their actors; every query is scoped by org. */
export interface RunRow {
  readonly id: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly workflowId: string;
  readonly version: number;
  readonly status: string;
  readonly steps: readonly unknown[];
  readonly error: string | null;
  readonly startedBy: string;
  readonly trigger: RunTriggerRecord;
  readonly input: Readonly<Record<string, unknown>>;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** How a run started (actors/kinds/workflow-run `RunTrigger`). */
export interface RunTriggerRecord {
  readonly kind: 'manual' | 'schedule' | 'webhook';
  readonly fireTime?: string;
  readonly eventId?: string;
}

export async function writeRun(trx: Knex.Transaction, run: RunRow): Promise<void> {
  const row = {
    org_id: run.orgId, project_id: run.projectId, workflow_id: run.workflowId, version: run.version, status: run.status,
    steps: JSON.stringify(run.steps), error: run.error, started_by: run.startedBy, created_at: run.createdAt, updated_at: run.updatedAt,
    trigger_kind: run.trigger.kind, fire_time: run.trigger.fireTime ?? null, trigger_ref: run.trigger.eventId ?? null,
    input: JSON.stringify(run.input),
  };
  await trx('workflow_runs').insert({ id: run.id, ...row }).onConflict('id').merge(row);
}

export async function findRun(db: Knex, orgId: string, id: string): Promise<RunRow | undefined> {
  if (!isUuid(id)) return undefined;
  const r = await withStorageErrors(() => db('workflow_runs').where({ org_id: orgId, id }).first());
  return r ? toRun(r) : undefined;
}

function toRun(r: Record<string, any>): RunRow {
  return {
    id: r.id, orgId: r.org_id, projectId: r.project_id, workflowId: r.workflow_id, version: Number(r.version), status: r.status,
    steps: r.steps, error: r.error ?? null, startedBy: r.started_by, createdAt: iso(r.created_at), updatedAt: iso(r.updated_at),
    trigger: {
      kind: r.trigger_kind ?? 'manual', ...(r.fire_time ? { fireTime: iso(r.fire_time) } : {}), ...(r.trigger_ref ? { eventId: r.trigger_ref } : {}),
    },
    input: (typeof r.input === 'string' ? JSON.parse(r.input) : r.input) ?? {},
  };
}

/** The runs named (of the org), with their workflow's name: what a gate list shows beside each gate. */
export async function runSummaries(db: Knex, orgId: string, ids: readonly string[]): Promise<Map<string, RunSummary>> {
  const wanted = [...new Set(ids.filter(isUuid))];
  if (wanted.length === 0) return new Map();
  const rows = await withStorageErrors(() => db('workflow_runs as r').leftJoin('workflows as w', 'w.id', 'r.workflow_id')
    .where({ 'r.org_id': orgId }).whereIn('r.id', wanted).select('r.id', 'r.workflow_id', 'r.version', 'r.status', 'w.name as workflow_name'));
  return new Map(rows.map((r: Record<string, any>) => [r.id as string, {
    runId: r.id as string, workflowId: r.workflow_id as string, workflowName: (r.workflow_name as string | null) ?? null,
    version: Number(r.version), status: r.status as string,
  }]));
}

export interface RunSummary {
  readonly runId: string;
  readonly workflowId: string;
  readonly workflowName: string | null;
  readonly version: number;
  readonly status: string;
}

/** A workflow's runs, newest first, paged by (created_at, id). */
export async function listRunsOf(db: Knex, orgId: string, workflowId: string, limit: number, before?: { createdAt: string; id: string }): Promise<RunRow[]> {
  if (!isUuid(workflowId)) return [];
  const rows = await withStorageErrors(() => {
    const q = db('workflow_runs').where({ org_id: orgId, workflow_id: workflowId })
      .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
    if (before !== undefined) {
      q.andWhere((w) => w.where('created_at', '<', before.createdAt).orWhere((same) => same.where('created_at', '=', before.createdAt).andWhere('id', '<', before.id)));
    }
    return q;
  });
  return rows.map(toRun);
}

/** Runs that are waiting on something, oldest first: what a node re-awakens after it starts. */
export async function activeRunIds(db: Knex, limit: number): Promise<string[]> {
  const rows = await withStorageErrors(() =>
    db('workflow_runs').whereIn('status', ['running', 'waiting', 'suspended']).orderBy('created_at').limit(limit).select('id'));
  return rows.map((r: { id: string }) => r.id);
}

/** A gate as read back: its record and its id. */
export interface GateRow extends GateRecord {
  readonly id: string;
}

export async function writeGate(trx: Knex.Transaction, id: string, g: GateRecord): Promise<void> {
  const row = {
    org_id: g.orgId, project_id: g.projectId, title: g.title, issue: g.issue, session_id: g.sessionId, run_id: g.runId,
    node_id: g.nodeId, escalation: g.escalation, required_role: g.requiredRole, status: g.status,
    decision: g.status === 'pending' ? null : g.status, decided_by: g.decidedBy === null ? null : JSON.stringify(g.decidedBy),
    decision_comment: g.comment ?? null,
    driver: g.driver, created_at: g.createdAt, decided_at: g.decidedAt,
  };
  await trx('approval_gates').insert({ id, ...row }).onConflict('id').merge(row);
}

export async function findGate(db: Knex, orgId: string, id: string): Promise<GateRow | undefined> {
  if (!isUuid(id)) return undefined;
  const r = await withStorageErrors(() => db('approval_gates').where({ org_id: orgId, id }).first());
  return r ? toGate(r) : undefined;
}

/** createdAt ascending (spec 4.8). */
export async function listGates(db: Knex, orgId: string, filter: { issue?: string; status?: string }): Promise<GateRow[]> {
  const rows = await withStorageErrors(() => {
    const q = db('approval_gates').where({ org_id: orgId }).orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(1000);
    if (filter.issue !== undefined) q.andWhere({ issue: filter.issue });
    if (filter.status !== undefined) q.andWhere({ status: filter.status });
    return q;
  });
  return rows.map(toGate);
}

function toGate(r: Record<string, any>): GateRow {
  return {
    id: r.id, orgId: r.org_id, projectId: r.project_id ?? null, title: r.title, issue: r.issue ?? null, sessionId: r.session_id ?? null,
    runId: r.run_id ?? null, nodeId: r.node_id ?? null, escalation: r.escalation ?? null, requiredRole: r.required_role ?? null,
    status: r.status, decidedBy: r.decided_by ?? null, comment: r.decision_comment ?? null, driver: r.driver ?? null, createdAt: iso(r.created_at),
    decidedAt: r.decided_at ? iso(r.decided_at) : null,
  };
}

const iso = (v: unknown): string => (v instanceof Date ? v : new Date(String(v))).toISOString();
