import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import { posteriorMean, type ArmChoice, type ArmPosterior } from '../../schemas/analytics/router.js';
import { sqlQuery } from '../sql-tx.js';
import { isUuid } from '../identity/rows.js';

/**
 * Router read models (decision 0013): arm posteriors in `router_arms`, observations in `session_outcomes` (one
 * per terminal run, written by the session actor), decisions in `router_decisions`. All scoped by org.
 */

export interface ArmView {
  readonly provider: string;
  readonly workType: string;
  readonly alpha: number;
  readonly beta: number;
  readonly mean: number;
  readonly samples: number;
}

export interface Observation {
  readonly id: string;
  readonly sessionId: string;
  readonly provider: string | null;
  readonly workType: string;
  readonly status: string;
  readonly success: boolean;
  readonly costUsd: number;
  readonly durationMs: number | null;
  readonly createdAt: string;
}

/** An arm with fewer observations than this is still mostly prior: the health summary calls it cold. */
export const COLD_ARM_SAMPLES = 10;
const DAY_MS = 86_400_000;

export async function armPosteriors(db: Knex, orgId: string): Promise<ArmView[]> {
  const rows = await db('router_arms').where({ org_id: orgId }).orderBy([{ column: 'provider' }, { column: 'work_type' }]);
  return rows.map((r: Record<string, unknown>) => {
    const alpha = Number(r.alpha);
    const beta = Number(r.beta);
    return { provider: r.provider as string, workType: r.work_type as string, alpha, beta, mean: posteriorMean(alpha, beta), samples: Number(r.samples) };
  });
}

/**
 * A cursor is the (created_at, id) of the last row served, opaque to clients. Pages walk newest first by that
 * key, so rows inserted while a client pages (always newer, or at least with a different key) never shift or
 * repeat the rows still to come.
 */
export function encodeCursor(createdAt: string, id: string): string {
  return Buffer.from(JSON.stringify([createdAt, id]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === 'string' && typeof parsed[1] === 'string' && parsed[1].length <= 200) {
      const createdAt = new Date(parsed[0]);
      if (!Number.isNaN(createdAt.getTime())) return { createdAt, id: parsed[1] };
    }
  } catch {
    // Falls through to the typed error below.
  }
  throw new TroupeError('HTTP_BAD_QUERY', 'cursor is not one this service issued', { field: 'cursor' });
}

export async function observationsPage(
  db: Knex, orgId: string, limit: number, cursor: string | undefined,
): Promise<{ observations: Observation[]; nextCursor: string | null }> {
  // Outcomes are kept by session key; they are shown by public id (decision 0068).
  const q = db('session_outcomes as o').leftJoin('sessions as s', 's.id', 'o.session_id').where({ 'o.org_id': orgId })
    .select('o.*', 's.public_id');
  if (cursor !== undefined) {
    const after = decodeCursor(cursor);
    q.whereRaw('(o.created_at, o.id) < (?::timestamptz, ?)', [after.createdAt.toISOString(), after.id]);
  }
  const rows = await q.orderBy([{ column: 'o.created_at', order: 'desc' }, { column: 'o.id', order: 'desc' }]).limit(limit + 1);
  const page = rows.slice(0, limit).map((r: Record<string, unknown>): Observation => ({
    id: r.id as string,
    sessionId: (r.public_id ?? r.session_id) as string,
    provider: (r.provider as string | null) ?? null,
    workType: r.work_type as string,
    status: r.status as string,
    success: Boolean(r.success),
    costUsd: Number(r.cost_usd),
    durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
    createdAt: new Date(r.created_at as string).toISOString(),
  }));
  const last = page[page.length - 1];
  return { observations: page, nextCursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null };
}

export interface RoutingHealth {
  /** 'no_data' before any outcome; 'degraded' when the last day's success rate is under half on ≥ 10 runs. */
  readonly status: 'healthy' | 'degraded' | 'no_data';
  readonly arms: number;
  readonly coldArms: number;
  readonly observations24h: number;
  readonly successRate24h: number | null;
  readonly routedDispatches24h: number;
  readonly lastObservationAt: string | null;
}

export async function routingHealth(db: Knex, orgId: string, arms: readonly ArmView[], now: number): Promise<RoutingHealth> {
  const since = new Date(now - DAY_MS);
  const [recent, last, routed] = await Promise.all([
    db('session_outcomes').where({ org_id: orgId }).where('created_at', '>=', since)
      .first(db.raw('count(*)::int as n'), db.raw('count(*) filter (where success)::int as ok')),
    db('session_outcomes').where({ org_id: orgId }).max('created_at as at').first(),
    db('router_decisions').where({ org_id: orgId }).where('created_at', '>=', since).count<{ n: string | number }[]>('* as n'),
  ]);
  const n = Number((recent as Record<string, unknown> | undefined)?.n ?? 0);
  const ok = Number((recent as Record<string, unknown> | undefined)?.ok ?? 0);
  const successRate = n === 0 ? null : Math.round((ok / n) * 1e6) / 1e6;
  const lastAt = (last as { at: unknown } | undefined)?.at;
  return {
    status: arms.length === 0 && lastAt == null ? 'no_data' : n >= 10 && successRate !== null && successRate < 0.5 ? 'degraded' : 'healthy',
    arms: arms.length,
    coldArms: arms.filter((a) => a.samples < COLD_ARM_SAMPLES).length,
    observations24h: n,
    successRate24h: successRate,
    routedDispatches24h: Number(routed[0]?.n ?? 0),
    lastObservationAt: lastAt == null ? null : new Date(lastAt as string).toISOString(),
  };
}

/**
 * What a dispatch reads before it asks the session actor, in one statement: whether its project is one of the org's,
 * and, for a dispatch that names no provider (`withArms`), the org's arm posteriors. Two statements cost the session
 * path a round trip and its CPU per dispatch (issue 19).
 */
export async function dispatchReads(
  db: Knex, orgId: string, projectId: string, withArms: boolean,
): Promise<{ projectKnown: boolean; arms: ArmPosterior[]; monthlyBudgetUsd: number | null }> {
  if (!isUuid(projectId)) return { projectKnown: false, arms: [], monthlyBudgetUsd: null };
  const [row] = await sqlQuery<{ known: boolean; monthly_usd: number | string | null; arms: [string, string, number | string, number | string][] | null }>(db, `
    select exists (select from projects where org_id = $1 and id = $2::uuid) as known,
      (select monthly_usd from project_budgets where org_id = $1 and project_id = $2::uuid) as monthly_usd,
      case when $3::boolean then (select json_agg(json_build_array(provider, work_type, alpha, beta)) from router_arms where org_id = $1) end as arms`,
  [orgId, projectId, withArms]);
  const arms = (row?.arms ?? []).map(([provider, workType, alpha, beta]) => ({ provider, workType, alpha: Number(alpha), beta: Number(beta) }));
  const monthly = row?.monthly_usd;
  return { projectKnown: row?.known === true, arms, monthlyBudgetUsd: monthly === null || monthly === undefined ? null : Number(monthly) };
}

/** Records which arm a dispatch was given; a replayed dispatch of the same session keeps the first record. */
export async function recordRoutingDecision(
  db: Knex, decision: { orgId: string; sessionId: string; requestId: string; choice: ArmChoice; at: number },
): Promise<void> {
  await db('router_decisions').insert({
    session_id: decision.sessionId, org_id: decision.orgId, request_id: decision.requestId, provider: decision.choice.provider,
    work_type: decision.choice.workType, draws: JSON.stringify(decision.choice.draws), created_at: new Date(decision.at),
  }).onConflict('session_id').ignore();
}
