import type { Knex } from 'knex';

/** Sessions of one org for the operator's `troupe sessions` view: newest activity first, bounded. */
export async function sessionsByStatus(
  db: Knex, orgId: string, status: string | undefined, limit: number,
): Promise<Record<string, unknown>[]> {
  const q = db('sessions as s').leftJoin('daemon_workers as w', 'w.id', 's.worker_id').where('s.org_id', orgId);
  if (status !== undefined) q.where('s.status', status);
  const rows = await q.orderBy([{ column: 's.updated_at', order: 'desc' }, { column: 's.id' }]).limit(limit)
    .select('s.public_id', 's.project_id', 's.status', 's.phase', 's.provider', 's.work_type', 's.tracker_issue', 's.worker_id', 'w.hostname',
      's.cost_usd', 's.created_at', 's.updated_at');
  return rows.map((r: Record<string, unknown>) => ({
    id: r.public_id, projectId: r.project_id, status: r.status, phase: r.phase ?? null, provider: r.provider ?? null, workType: r.work_type ?? null,
    trackerIssue: r.tracker_issue ?? null, workerId: r.worker_id ?? null, workerHostname: r.hostname ?? null, costUsd: Number(r.cost_usd),
    createdAt: new Date(r.created_at as string).toISOString(), updatedAt: new Date(r.updated_at as string).toISOString(),
  }));
}
