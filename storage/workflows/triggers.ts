import type { Knex } from 'knex';
import { withStorageErrors } from '../storage-errors.js';
import type { Trigger } from '../../schemas/workflows/definition.js';

/**
 * `workflow_triggers` (migration 0040): what the execution layer is deployed with, one row per workflow, written
 * by the workflow actor in the snapshot transaction of every version. Webhook deliveries are matched against it;
 * schedule actors converge to it (the schedule service hands them every row they have not applied yet).
 */
export interface Deployment {
  readonly workflowId: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly workflowVersion: number;
  /** The version runs start on; null unless the workflow is published. */
  readonly publishedVersion: number | null;
  readonly trigger: Trigger;
}

export async function writeDeployment(trx: Knex.Transaction, d: Deployment, at: Date): Promise<void> {
  const row = {
    org_id: d.orgId, project_id: d.projectId, workflow_version: d.workflowVersion, published_version: d.publishedVersion,
    kind: d.trigger.type, trigger: JSON.stringify(d.trigger),
    provider: d.trigger.type === 'webhook' ? d.trigger.provider : null, event: d.trigger.type === 'webhook' ? d.trigger.event : null,
    updated_at: at,
  };
  await trx('workflow_triggers').insert({ workflow_id: d.workflowId, ...row }).onConflict('workflow_id').merge(row);
}

const toDeployment = (r: Record<string, any>): Deployment => ({
  workflowId: r.workflow_id, orgId: r.org_id, projectId: r.project_id, workflowVersion: Number(r.workflow_version),
  publishedVersion: r.published_version === null ? null : Number(r.published_version),
  trigger: (typeof r.trigger === 'string' ? JSON.parse(r.trigger) : r.trigger) as Trigger,
});

/** The org's published workflows with a webhook trigger on this provider, oldest deployment first. */
export async function webhookDeployments(db: Knex, orgId: string, provider: string, limit: number): Promise<Deployment[]> {
  const rows = await withStorageErrors(() => db('workflow_triggers')
    .where({ org_id: orgId, kind: 'webhook', provider }).whereNotNull('published_version')
    .orderBy('updated_at').limit(limit));
  return rows.map(toDeployment);
}

/**
 * Deployments a schedule has not caught up with: a scheduled workflow whose schedule has not applied its current
 * version, or an active schedule whose workflow has moved on (republished, unpublished, another trigger).
 */
export async function unappliedScheduleDeployments(db: Knex, limit: number): Promise<Deployment[]> {
  const rows = await withStorageErrors(() => db('workflow_triggers as t')
    .leftJoin('workflow_schedules as s', 's.workflow_id', 't.workflow_id')
    .where((w) => w.where((scheduled) => scheduled.where('t.kind', 'schedule').whereNotNull('t.published_version')).orWhere('s.status', 'active'))
    .andWhereRaw('coalesce(s.applied_version, 0) < t.workflow_version')
    .orderBy('t.updated_at').limit(limit)
    .select('t.*'));
  return rows.map(toDeployment);
}
