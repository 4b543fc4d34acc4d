import type { Knex } from 'knex';

/**
 * Platform-wide anonymised aggregates (decision 0013), read across every org from `session_outcomes`.
 *
 * Why it cannot single out an org, even by differencing two answers:
 * - One fixed partition only: (UTC calendar week, terminal status). No totals, no second grouping and no caller
 *   filters, so no published cell is the sum of others plus a suppressed one.
 * - Only complete weeks (the last `AGGREGATE_WEEKS` before the current one). `session_outcomes` is append-only
 *   and each row is stamped when its run ended, so a complete week's cells never change between two queries.
 * - A cell built from fewer than `kAnonymityFloor` distinct orgs is withheld; only their number is reported.
 * - Rows carry no org ids, names, providers, work types or any other caller-supplied text.
 */

export const AGGREGATE_WEEKS = 12;
const WEEK_MS = 7 * 86_400_000;

export interface AggregateRow {
  readonly weekStart: string;
  readonly outcome: 'completed' | 'failed' | 'stopped';
  readonly sessions: number;
  readonly avgCostUsd: number;
  readonly avgDurationMs: number | null;
}

export interface PlatformAggregates {
  readonly bucket: 'week';
  readonly from: string;
  readonly to: string;
  readonly kAnonymityFloor: number;
  readonly rows: AggregateRow[];
  readonly suppressedRows: number;
  readonly generatedAt: string;
}

/** Monday 00:00 UTC of the week containing `ms` (ISO weeks, as Postgres `date_trunc('week')`). */
export function weekStart(ms: number): number {
  const d = new Date(ms);
  const day = (d.getUTCDay() + 6) % 7;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - day);
}

export async function platformAggregates(db: Knex, floor: number, now: number): Promise<PlatformAggregates> {
  const to = weekStart(now);
  const from = to - AGGREGATE_WEEKS * WEEK_MS;
  const rows = await db('session_outcomes')
    .where('created_at', '>=', new Date(from)).where('created_at', '<', new Date(to))
    .groupByRaw("date_trunc('week', created_at at time zone 'UTC'), status")
    .orderByRaw("date_trunc('week', created_at at time zone 'UTC'), status")
    .select(
      db.raw("to_char(date_trunc('week', created_at at time zone 'UTC'), 'YYYY-MM-DD') as week"),
      'status',
      db.raw('count(*)::int as sessions'),
      db.raw('count(distinct org_id)::int as orgs'),
      db.raw('avg(cost_usd)::float8 as avg_cost'),
      db.raw('avg(duration_ms)::float8 as avg_duration'),
    );
  const published: AggregateRow[] = [];
  let suppressed = 0;
  for (const r of rows as Record<string, unknown>[]) {
    if (Number(r.orgs) < floor) {
      suppressed++;
      continue;
    }
    published.push({
      weekStart: r.week as string,
      outcome: r.status as AggregateRow['outcome'],
      sessions: Number(r.sessions),
      avgCostUsd: Math.round(Number(r.avg_cost) * 1e6) / 1e6,
      avgDurationMs: r.avg_duration === null ? null : Math.round(Number(r.avg_duration)),
    });
  }
  return {
    bucket: 'week', from: new Date(from).toISOString(), to: new Date(to).toISOString(), kAnonymityFloor: floor,
    rows: published, suppressedRows: suppressed, generatedAt: new Date(now).toISOString(),
  };
}
