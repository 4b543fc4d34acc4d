import type { Knex } from 'knex';

/**
 * Project budgets and month-to-date spend (migration 0052, decision 0080). Every read and write is scoped by org.
 *
 * Spend is the sum of `sessions.cost_usd`, the cumulative cost a session's worker reported, the figure the session
 * detail shows and the org quota adds at a session's end: one row per session, so each session counts once. A session
 * counts in the UTC month it ended in, or, while it is live, in the month of its latest report: a running session's
 * spend holds the budget back before it ends, which the quota (counted only at the end) would not.
 */
export interface Budget {
  readonly monthlyUsd: number | null;
  readonly perSessionUsd: number | null;
}

export interface BudgetView extends Budget {
  readonly projectId: string;
  readonly spentThisMonthUsd: number;
  readonly monthStartsAt: string;
}

/** The audit entry of a change, written in the change's transaction. */
export type AuditIn = (trx: Knex.Transaction) => Promise<void>;

type Row = Record<string, unknown>;
const usd = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** The first instant of the UTC month `ms` falls in. */
export const monthStart = (ms: number): Date => {
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
};

export async function projectBudget(db: Knex | Knex.Transaction, orgId: string, projectId: string): Promise<Budget> {
  const row = await db('project_budgets').where({ org_id: orgId, project_id: projectId }).first('monthly_usd', 'per_session_usd') as Row | undefined;
  return { monthlyUsd: usd(row?.monthly_usd), perSessionUsd: usd(row?.per_session_usd) };
}

/** The project's spend since the start of the UTC month `now` falls in. */
export async function monthToDateSpend(db: Knex | Knex.Transaction, orgId: string, projectId: string, now: number): Promise<number> {
  const since = monthStart(now);
  const row = await db('sessions').where({ org_id: orgId, project_id: projectId })
    // `updated_at` is never before `finished_at`: the first bound uses the index, the second decides the month.
    .where('updated_at', '>=', since)
    .whereRaw('coalesce(finished_at, updated_at) >= ?', [since])
    .first(db.raw('coalesce(sum(cost_usd), 0)::float8 as spent')) as Row | undefined;
  return Number(row?.spent ?? 0);
}

export async function budgetView(db: Knex, orgId: string, projectId: string, now: number): Promise<BudgetView> {
  const [budget, spent] = await Promise.all([projectBudget(db, orgId, projectId), monthToDateSpend(db, orgId, projectId, now)]);
  return { projectId, ...budget, spentThisMonthUsd: spent, monthStartsAt: monthStart(now).toISOString() };
}

/**
 * Sets the members `change` names (undefined keeps one, null clears it); a budget with neither limit is removed.
 * Audited only when it changed. Answers the budget before and after.
 */
export async function setProjectBudget(
  db: Knex, orgId: string, projectId: string, change: Partial<Budget>, by: string, at: Date, audit: (before: Budget, after: Budget) => AuditIn,
): Promise<{ before: Budget; after: Budget }> {
  return db.transaction(async (trx) => {
    // Serialises concurrent edits of one project's budget, so each audited `before` is what the change replaced.
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 80))', [`budget:${projectId}`]);
    const before = await projectBudget(trx, orgId, projectId);
    const after: Budget = {
      monthlyUsd: change.monthlyUsd === undefined ? before.monthlyUsd : change.monthlyUsd,
      perSessionUsd: change.perSessionUsd === undefined ? before.perSessionUsd : change.perSessionUsd,
    };
    if (after.monthlyUsd === before.monthlyUsd && after.perSessionUsd === before.perSessionUsd) return { before, after };
    if (after.monthlyUsd === null && after.perSessionUsd === null) {
      await trx('project_budgets').where({ org_id: orgId, project_id: projectId }).delete();
    } else {
      await trx('project_budgets').insert({
        project_id: projectId, org_id: orgId, monthly_usd: after.monthlyUsd, per_session_usd: after.perSessionUsd, updated_at: at, updated_by: by,
      }).onConflict('project_id').merge(['monthly_usd', 'per_session_usd', 'updated_at', 'updated_by']);
    }
    await audit(before, after)(trx);
    return { before, after };
  });
}

/** The budgets of the org's projects that have one, with each one's month-to-date spend (fleet statistics). */
export async function orgBudgets(db: Knex, orgId: string, now: number): Promise<Array<Budget & { projectId: string; spentThisMonthUsd: number }>> {
  const since = monthStart(now);
  const rows = await db('project_budgets as b').where('b.org_id', orgId)
    .select('b.project_id', 'b.monthly_usd', 'b.per_session_usd', db.raw(`(select coalesce(sum(s.cost_usd), 0)::float8 from sessions s
      where s.org_id = b.org_id and s.project_id = b.project_id and s.updated_at >= ? and coalesce(s.finished_at, s.updated_at) >= ?) as spent`, [since, since]))
    .orderBy('b.project_id') as Row[];
  return rows.map((r) => ({
    projectId: String(r.project_id), monthlyUsd: usd(r.monthly_usd), perSessionUsd: usd(r.per_session_usd), spentThisMonthUsd: Number(r.spent),
  }));
}

/** Why the server stopped the session's current run, or null (not stopped, or stopped by a person or its worker). */
export async function stopReasonOf(db: Knex, orgId: string, sessionKey: string): Promise<string | null> {
  const row = await db('session_stop_reasons as r')
    .join('sessions as s', function () { this.on('s.id', 'r.session_id').andOn('s.epoch', 'r.epoch').andOn('s.org_id', 'r.org_id'); })
    .where({ 'r.session_id': sessionKey, 'r.org_id': orgId, 's.status': 'stopped' })
    .first('r.reason') as Row | undefined;
  return row === undefined ? null : String(row.reason);
}

/** The session's current run and its cost as the read model has them (the stop check after a report). */
export async function sessionRunCost(db: Knex, orgId: string, sessionKey: string): Promise<{ epoch: number; costUsd: number; projectId: string; status: string } | undefined> {
  const row = await db('sessions').where({ id: sessionKey, org_id: orgId }).first('epoch', 'cost_usd', 'project_id', 'status') as Row | undefined;
  return row && { epoch: Number(row.epoch), costUsd: Number(row.cost_usd), projectId: String(row.project_id), status: String(row.status) };
}
