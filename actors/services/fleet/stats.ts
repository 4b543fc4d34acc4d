import type { Knex } from 'knex';
import { pausedProjectQueues, type Pause } from '../../../storage/queue-control/pauses.js';
import { orgBudgets, type Budget } from '../../../storage/budgets/budgets.js';

/**
 * Fleet statistics of one org (spec 4.8 "Fleet statistics", `GET /api/fleet/stats`), read from the session and
 * daemon read models; every query is scoped by org. A worker is live when it was seen within the session lease,
 * the same rule the lease sweeper uses to take its sessions away.
 */
export interface FleetStats {
  /** `paused`: registered workers that are offered nothing (decision 0079). */
  readonly workers: { readonly live: number; readonly registered: number; readonly paused: number };
  readonly capacity: { readonly total: number; readonly inUse: number; readonly free: number };
  readonly sessions: { readonly byStatus: Record<string, number>; readonly total: number };
  /** `pausedProjects`: the projects whose queues are paused: their pending sessions are counted in `depth` but offered to no one. */
  readonly queue: {
    readonly depth: number; readonly waitingForLock: number; readonly oldestPendingAt: string | null;
    readonly pausedProjects: ReadonlyArray<Pause & { readonly projectId: string }>;
  };
  readonly quota: { readonly period: string; readonly sessions: number; readonly costUsd: number };
  /** Spend this UTC month against budget, for each project that has one (decision 0080). */
  readonly budgets: ReadonlyArray<Budget & { readonly projectId: string; readonly spentThisMonthUsd: number }>;
  readonly generatedAt: string;
}

const statusesReported = ['pending', 'claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] as const;
const heldStatuses = ['claimed', 'running', 'paused', 'finalizing'];

/** The quota period a time falls in: its UTC month, as `fleet_quota_usage.period` records it. */
export const quotaPeriod = (ms: number): string => new Date(ms).toISOString().slice(0, 7);

export async function fleetStats(db: Knex, orgId: string, now: number, leaseMs: number): Promise<FleetStats> {
  const liveSince = new Date(now - leaseMs);
  const [workers, byStatus, queue, quota, pausedProjects, budgets] = await Promise.all([
    db('daemon_workers').where({ org_id: orgId })
      .select(
        db.raw('count(*)::int as registered'),
        db.raw('(select count(*) from worker_pauses wp where wp.org_id = ?)::int as paused', [orgId]),
        db.raw('count(*) filter (where last_seen_at >= ?)::int as live', [liveSince]),
        db.raw('coalesce(sum(max_agents) filter (where last_seen_at >= ?), 0)::int as capacity', [liveSince]),
      ).first(),
    db('sessions').where({ org_id: orgId }).groupBy('status').select('status', db.raw('count(*)::int as n')),
    db('sessions').where({ org_id: orgId, status: 'pending' })
      .select(
        db.raw('count(*)::int as depth'),
        db.raw(`count(*) filter (where lock_state = 'waiting')::int as waiting`),
        db.raw('min(created_at) as oldest'),
      ).first(),
    db('fleet_quota_usage').where({ org_id: orgId, period: quotaPeriod(now) }).first('sessions', 'cost_usd'),
    pausedProjectQueues(db, orgId),
    orgBudgets(db, orgId, now),
  ]);
  const counts: Record<string, number> = Object.fromEntries(statusesReported.map((s) => [s, 0]));
  for (const r of byStatus as { status: string; n: number }[]) counts[r.status] = Number(r.n);
  const inUse = heldStatuses.reduce((sum, s) => sum + (counts[s] ?? 0), 0);
  const total = Number(workers?.capacity ?? 0);
  return {
    workers: { live: Number(workers?.live ?? 0), registered: Number(workers?.registered ?? 0), paused: Number(workers?.paused ?? 0) },
    capacity: { total, inUse, free: Math.max(0, total - inUse) },
    sessions: { byStatus: counts, total: Object.values(counts).reduce((a, b) => a + b, 0) },
    queue: {
      depth: Number(queue?.depth ?? 0),
      waitingForLock: Number(queue?.waiting ?? 0),
      oldestPendingAt: queue?.oldest ? new Date(queue.oldest as string).toISOString() : null,
      pausedProjects,
    },
    quota: { period: quotaPeriod(now), sessions: Number(quota?.sessions ?? 0), costUsd: Number(quota?.cost_usd ?? 0) },
    budgets,
    generatedAt: new Date(now).toISOString(),
  };
}
