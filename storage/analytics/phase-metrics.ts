import type { Knex } from 'knex';

/**
 * Phase metrics (spec 2.7) of one org over a trailing window, from `phase_records` (see ./session-facts.ts for how
 * records are written). A record belongs to the window when it started inside it. Definitions (decision 0013):
 * - per phase: `totalRecords` (records, open or closed), `avgCycleTimeMs` and `avgCostUsd` (over closed records;
 *   0 when none has closed), `avgAttempts` (records ÷ distinct runs that entered the phase: 1 means no run came back).
 * - `reworkRate`: share of records that re-entered a phase the run had already been in (attempt ≥ 2).
 * - `escalationDistribution`: share of finished runs by how far they escalated: `none` (completed, no rework),
 *   `rework` (completed after rework), `failed`, `stopped` (a human or the platform stopped it). Sums to 1, or is
 *   all zeros when no run in the window has finished.
 * - `issueCount`: distinct tracker issues among the records; a run without a tracker issue counts as its own.
 */

export const phaseMetricRanges = { '7d': 7, '30d': 30, '90d': 90 } as const;
export type PhaseMetricRange = keyof typeof phaseMetricRanges;

export interface PhaseFigures {
  readonly avgCycleTimeMs: number;
  readonly avgCostUsd: number;
  readonly avgAttempts: number;
  readonly totalRecords: number;
}

export interface PhaseMetrics {
  readonly timeRange: PhaseMetricRange;
  readonly phases: Record<string, PhaseFigures>;
  readonly reworkRate: number;
  readonly escalationDistribution: { none: number; rework: number; failed: number; stopped: number };
  readonly issueCount: number;
  readonly timestamp: string;
}

const DAY_MS = 86_400_000;
const round = (v: number, places: number): number => Math.round(v * 10 ** places) / 10 ** places;

export async function phaseMetrics(db: Knex, orgId: string, range: PhaseMetricRange, now: number): Promise<PhaseMetrics> {
  const since = new Date(now - phaseMetricRanges[range] * DAY_MS);
  const inWindow = () => db('phase_records').where('org_id', orgId).where('started_at', '>=', since);

  const [perPhase, totals, runs] = await Promise.all([
    inWindow().groupBy('phase').orderBy('phase').select(
      'phase',
      db.raw('count(*)::int as total'),
      db.raw('count(distinct (session_id, epoch))::int as runs'),
      db.raw('coalesce(avg(cycle_time_ms) filter (where ended_at is not null), 0)::float8 as avg_cycle'),
      db.raw('coalesce(avg(cost_usd) filter (where ended_at is not null), 0)::float8 as avg_cost'),
    ),
    inWindow().first(
      db.raw('count(*)::int as total'),
      db.raw('count(*) filter (where attempt > 1)::int as rework'),
      db.raw("count(distinct coalesce(tracker_issue, 'session:' || session_id))::int as issues"),
    ),
    inWindow().groupBy('session_id', 'epoch').select(
      db.raw('bool_or(attempt > 1) as reworked'),
      db.raw("max(outcome) filter (where outcome in ('completed', 'failed', 'stopped')) as final"),
    ),
  ]);

  const phases: Record<string, PhaseFigures> = {};
  for (const r of perPhase as Record<string, unknown>[]) {
    const total = Number(r.total);
    phases[r.phase as string] = {
      avgCycleTimeMs: round(Number(r.avg_cycle), 3),
      avgCostUsd: round(Number(r.avg_cost), 6),
      avgAttempts: round(total / Math.max(1, Number(r.runs)), 6),
      totalRecords: total,
    };
  }
  const counts = { none: 0, rework: 0, failed: 0, stopped: 0 };
  for (const r of runs as { reworked: boolean; final: string | null }[]) {
    if (r.final === 'completed') counts[r.reworked ? 'rework' : 'none']++;
    else if (r.final === 'failed' || r.final === 'stopped') counts[r.final]++;
  }
  const finished = counts.none + counts.rework + counts.failed + counts.stopped;
  const share = (n: number): number => (finished === 0 ? 0 : round(n / finished, 6));
  const total = Number((totals as Record<string, unknown> | undefined)?.total ?? 0);
  return {
    timeRange: range,
    phases,
    reworkRate: total === 0 ? 0 : round(Number((totals as Record<string, unknown>).rework) / total, 6),
    escalationDistribution: { none: share(counts.none), rework: share(counts.rework), failed: share(counts.failed), stopped: share(counts.stopped) },
    issueCount: Number((totals as Record<string, unknown> | undefined)?.issues ?? 0),
    timestamp: new Date(now).toISOString(),
  };
}
