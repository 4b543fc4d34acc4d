import type { Knex } from 'knex';
import type { Deps } from '../deps.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { monthToDateSpend, projectBudget, sessionRunCost } from '../../../storage/budgets/budgets.js';
import { isTerminal, sessionAddress, type SessionReply, type SessionStatus } from '../../kinds/session/index.js';

/**
 * Budgets that hold (issue 35 §2, decision 0080): a project whose month-to-date spend reached its monthly budget
 * dispatches nothing, and a run whose reported cost passed the per-session budget is stopped by the server.
 */

/** Who the server's budget stop is recorded as (the session's stop and the audit entry). */
export const BUDGET_STOPPER = 'system:budget';
export const BUDGET_STOP_REASON = 'budget';

/**
 * The one check every new dispatch passes (the API, provider webhooks, workflow agent nodes and through them
 * schedules): BUDGET_EXCEEDED (409, `details: {spentUsd, limitUsd}`) when the project's month-to-date spend is at or
 * over its monthly budget. Read, not reserved: dispatches racing the limit may each pass once, a bounded overshoot.
 */
export async function assertWithinMonthlyBudget(db: Knex, orgId: string, projectId: string, now: number): Promise<void> {
  const { monthlyUsd } = await projectBudget(db, orgId, projectId);
  await assertSpendBelow(db, orgId, projectId, monthlyUsd, now);
}

/** The same, for a caller that read the monthly budget already (the dispatch route, with the project check). */
export async function assertSpendBelow(db: Knex, orgId: string, projectId: string, monthlyUsd: number | null, now: number): Promise<void> {
  if (monthlyUsd === null) return;
  const spentUsd = await monthToDateSpend(db, orgId, projectId, now);
  if (spentUsd >= monthlyUsd) {
    throw new TroupeError('BUDGET_EXCEEDED', `the project has spent ${spentUsd} USD this month, its budget is ${monthlyUsd} USD`, {
      spentUsd, limitUsd: monthlyUsd,
    });
  }
}

/** The check as the dispatch port of workflow runs and provider events (actors/kinds/index.ts). */
export const dispatchBudget = (db: Knex, now: () => number = Date.now) => (orgId: string, projectId: string): Promise<void> =>
  assertWithinMonthlyBudget(db, orgId, projectId, now());

/**
 * After a worker's report was accepted: a live run whose cumulative cost passed the project's per-session budget is
 * stopped through the ordinary stop (the worker gets its stop signal and ends the agent), its reason recorded as
 * `budget` and audited. Answers whether this call stopped it. A repeat (a retried report) finds it stopped and does nothing.
 */
export async function stopRunOverBudget(deps: Deps, orgId: string, sessionKey: string, publicId: string): Promise<boolean> {
  const run = await sessionRunCost(deps.db, orgId, sessionKey);
  if (run === undefined || isTerminal(run.status as SessionStatus)) return false;
  const { perSessionUsd } = await projectBudget(deps.db, orgId, run.projectId);
  if (perSessionUsd === null || run.costUsd <= perSessionUsd) return false;
  // The machine records the reason and the audit entry with the stop (actors/kinds/session/machine.ts).
  const reply = await deps.ask<SessionReply>(sessionAddress(sessionKey), {
    type: 'session.stop', requestedBy: BUDGET_STOPPER, reason: BUDGET_STOP_REASON, details: { costUsd: run.costUsd, limitUsd: perSessionUsd },
  });
  return reply.kind === 'stopped' && reply.stopped;
}
