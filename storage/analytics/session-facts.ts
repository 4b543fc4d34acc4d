import type { SqlTx } from '../sql-tx.js';
import { APPLIED, type FollowUp, type TransitionStatement } from '../transition-statement.js';
import type { SessionEffect, SessionState } from '../../schemas/sessions/session-state.js';
import { DEFAULT_WORK_TYPE, PRIOR_ALPHA, PRIOR_BETA } from '../../schemas/analytics/router.js';

/**
 * The analytics facts a session transition leaves behind, written by the session actor's projection with its
 * snapshot (decision 0013), so they commit exactly when the transition does:
 *
 * - Phase records. A worker names the phase it is in with `phase` on `POST /api/sessions/{id}/status`
 *   (`{status, workerId, phase?, costUsd?}`; `costUsd` is the run's cumulative cost so far). A record opens when a
 *   run reports a phase different from its current one, and closes when the next phase is reported, when the run
 *   ends (completed/failed/stopped) or when it returns to the queue (lost lease, re-dispatch). Its cost is the
 *   growth of the cumulative cost between the two reports; its cycle time the time between them. Entering a phase
 *   the run has already been in is attempt 2, 3, …: rework.
 * - One session outcome per terminal run, keyed by the run's terminal ledger key, and the Beta posterior of the
 *   run's (provider, workType) arm bumped once with it.
 *
 * Every key is deterministic (`<session>:<epoch>:<phase>:<attempt>`, the terminal key) and every close is guarded
 * by `ended_at is null`, so a projection replayed over the same transition writes nothing twice. The outcome is a part
 * of the snapshot's own statement, like the session's own projection (storage/transition-statement.ts, decision 0055).
 */

const isTerminal = (s: string): s is 'completed' | 'failed' | 'stopped' => s === 'completed' || s === 'failed' || s === 'stopped';

export function sessionAnalyticsStatement(
  st: TransitionStatement, id: string, next: SessionState, previous: SessionState, effects: readonly SessionEffect[], now: number,
): FollowUp | undefined {
  if (next.spec === null) return undefined;
  for (const effect of effects) {
    if (effect.type === 'terminal') outcomeParts(st, id, next, effect, now);
  }
  // Phase records are read before they are closed or counted, so they follow the statement, and only when a phase moves.
  return phaseWork(next, previous) ? (tx) => recordPhases(tx, id, next, previous, now) : undefined;
}

/** Whether this transition closes an open phase record or opens one (the conditions `recordPhases` acts on). */
function phaseWork(next: SessionState, previous: SessionState): boolean {
  if (isTerminal(previous.status)) return false;
  const newRun = next.epoch !== previous.epoch;
  const phaseChanged = next.phase !== previous.phase;
  const ended = isTerminal(next.status);
  const requeued = next.status === 'pending' && previous.status !== 'pending';
  const closes = previous.phase !== null && (phaseChanged || ended || requeued || newRun);
  const opens = next.phase !== null && next.status !== 'pending' && (phaseChanged || newRun);
  return closes || opens;
}

async function recordPhases(tx: SqlTx, id: string, next: SessionState, previous: SessionState, now: number): Promise<void> {
  const spec = next.spec!;
  const newRun = next.epoch !== previous.epoch;
  const ended = isTerminal(next.status) && !isTerminal(previous.status);
  const requeued = next.status === 'pending' && previous.status !== 'pending';
  const phaseChanged = next.phase !== previous.phase;

  if (previous.phase !== null && !isTerminal(previous.status) && (phaseChanged || ended || requeued || newRun)) {
    const outcome = ended ? next.status : requeued || newRun ? 'requeued' : 'advanced';
    await closeOpenPhase(tx, id, previous.epoch, outcome, next.costUsd, now);
  }
  const entering = next.phase !== null && !isTerminal(previous.status) && next.status !== 'pending' && (phaseChanged || newRun);
  if (!entering) return;
  const phase = next.phase!;
  const prior = await tx.query<{ n: string | number }>(
    'select count(*) as n from phase_records where session_id = $1 and epoch = $2 and phase = $3', [id, next.epoch, phase],
  );
  const attempt = Number(prior.rows[0]?.n ?? 0) + 1;
  await tx.query(
    `insert into phase_records (id, org_id, project_id, session_id, epoch, tracker_issue, phase, attempt, cost_at_start, started_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) on conflict (id) do nothing`,
    [`${id}:${next.epoch}:${phase}:${attempt}`, spec.orgId, spec.projectId, id, next.epoch, spec.trackerIssue, phase, attempt, next.costUsd, new Date(now)],
  );
  // A run that names its phase with its final report spent no measurable time in it; the record still counts.
  if (isTerminal(next.status)) await closeOpenPhase(tx, id, next.epoch, next.status, next.costUsd, now);
}

async function closeOpenPhase(tx: SqlTx, id: string, epoch: number, outcome: string, costNow: number, now: number): Promise<void> {
  const open = (await tx.query<{ id: string; started_at: Date | string; cost_at_start: number | string }>(
    'select id, started_at, cost_at_start from phase_records where session_id = $1 and epoch = $2 and ended_at is null limit 1', [id, epoch],
  )).rows[0];
  if (!open) return;
  const startedAt = new Date(open.started_at).getTime();
  await tx.query(
    'update phase_records set ended_at = $1, cycle_time_ms = $2, cost_usd = $3, outcome = $4 where id = $5 and ended_at is null',
    // Cost is cumulative per run; a report lower than the one that opened the phase is a worker bug, not a refund.
    [new Date(now), Math.max(0, now - startedAt), Math.max(0, costNow - Number(open.cost_at_start)), outcome, open.id],
  );
}

function outcomeParts(
  st: TransitionStatement, id: string, s: SessionState, effect: Extract<SessionEffect, { type: 'terminal' }>, now: number,
): void {
  const spec = s.spec!;
  const workType = spec.workType ?? DEFAULT_WORK_TYPE;
  const success = effect.status === 'completed';
  const began = s.startedAt ?? s.claimedAt;
  const outcome = [effect.key, spec.orgId, id, spec.provider, workType, effect.status, success, effect.costUsd, began === null ? null : Math.max(0, now - began), new Date(now)];
  st.part('a_outcome', `insert into session_outcomes (id, org_id, session_id, provider, work_type, status, success, cost_usd, duration_ms, created_at)
    select ${st.list(outcome)} where ${APPLIED} on conflict (id) do nothing returning id`);
  if (spec.provider === null) return;
  const arm = [spec.orgId, spec.provider, workType, PRIOR_ALPHA + (success ? 1 : 0), PRIOR_BETA + (success ? 0 : 1)];
  st.part('a_arm', `insert into router_arms (org_id, provider, work_type, alpha, beta, samples, updated_at)
    select ${st.list(arm)}, 1, ${st.value(new Date(now))} where exists (select from a_outcome)
    on conflict (org_id, provider, work_type) do update set alpha = router_arms.alpha + ${st.value(success ? 1 : 0)},
      beta = router_arms.beta + ${st.value(success ? 0 : 1)}, samples = router_arms.samples + 1, updated_at = excluded.updated_at`);
}
