import type { Knex } from 'knex';
import type { SessionEffect, SessionState } from '../../schemas/sessions/session-state.js';
import { DEFAULT_WORK_TYPE, PRIOR_ALPHA, PRIOR_BETA } from '../../schemas/analytics/router.js';

/**
 * The analytics facts a session transition leaves behind, written by the session actor's `project` inside its
 * snapshot transaction (decision 0013), so they commit exactly when the transition does:
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
 * by `ended_at is null`, so a projection replayed over the same transition writes nothing twice.
 */

const isTerminal = (s: string): s is 'completed' | 'failed' | 'stopped' => s === 'completed' || s === 'failed' || s === 'stopped';

export async function recordSessionAnalytics(
  trx: Knex.Transaction, id: string, next: SessionState, previous: SessionState, effects: readonly SessionEffect[], now: number,
): Promise<void> {
  const spec = next.spec;
  if (spec === null) return;
  await recordPhases(trx, id, next, previous, now);
  for (const effect of effects) {
    if (effect.type === 'terminal') await recordOutcome(trx, id, next, effect, now);
  }
}

async function recordPhases(trx: Knex.Transaction, id: string, next: SessionState, previous: SessionState, now: number): Promise<void> {
  const spec = next.spec!;
  const newRun = next.epoch !== previous.epoch;
  const ended = isTerminal(next.status) && !isTerminal(previous.status);
  const requeued = next.status === 'pending' && previous.status !== 'pending';
  const phaseChanged = next.phase !== previous.phase;

  if (previous.phase !== null && !isTerminal(previous.status) && (phaseChanged || ended || requeued || newRun)) {
    const outcome = ended ? next.status : requeued || newRun ? 'requeued' : 'advanced';
    await closeOpenPhase(trx, id, previous.epoch, outcome, next.costUsd, now);
  }
  const entering = next.phase !== null && !isTerminal(previous.status) && next.status !== 'pending' && (phaseChanged || newRun);
  if (!entering) return;
  const phase = next.phase!;
  const prior = await trx('phase_records').where({ session_id: id, epoch: next.epoch, phase }).count<{ n: string | number }[]>('* as n');
  const attempt = Number(prior[0]?.n ?? 0) + 1;
  await trx('phase_records').insert({
    id: `${id}:${next.epoch}:${phase}:${attempt}`, org_id: spec.orgId, project_id: spec.projectId, session_id: id, epoch: next.epoch,
    tracker_issue: spec.trackerIssue, phase, attempt, cost_at_start: next.costUsd, started_at: new Date(now),
  }).onConflict('id').ignore();
  // A run that names its phase with its final report spent no measurable time in it; the record still counts.
  if (isTerminal(next.status)) await closeOpenPhase(trx, id, next.epoch, next.status, next.costUsd, now);
}

async function closeOpenPhase(trx: Knex.Transaction, id: string, epoch: number, outcome: string, costNow: number, now: number): Promise<void> {
  const open = await trx('phase_records').where({ session_id: id, epoch }).whereNull('ended_at').first('id', 'started_at', 'cost_at_start');
  if (!open) return;
  const startedAt = new Date(open.started_at as string).getTime();
  await trx('phase_records').where({ id: open.id }).whereNull('ended_at').update({
    ended_at: new Date(now),
    cycle_time_ms: Math.max(0, now - startedAt),
    // Cost is cumulative per run; a report lower than the one that opened the phase is a worker bug, not a refund.
    cost_usd: Math.max(0, costNow - Number(open.cost_at_start)),
    outcome,
  });
}

async function recordOutcome(
  trx: Knex.Transaction, id: string, s: SessionState, effect: Extract<SessionEffect, { type: 'terminal' }>, now: number,
): Promise<void> {
  const spec = s.spec!;
  const workType = spec.workType ?? DEFAULT_WORK_TYPE;
  const success = effect.status === 'completed';
  const began = s.startedAt ?? s.claimedAt;
  const inserted = await trx('session_outcomes').insert({
    id: effect.key, org_id: spec.orgId, session_id: id, provider: spec.provider, work_type: workType, status: effect.status,
    success, cost_usd: effect.costUsd, duration_ms: began === null ? null : Math.max(0, now - began), created_at: new Date(now),
  }).onConflict('id').ignore().returning('id');
  if (inserted.length === 0 || spec.provider === null) return;
  await trx('router_arms')
    .insert({
      org_id: spec.orgId, provider: spec.provider, work_type: workType,
      alpha: PRIOR_ALPHA + (success ? 1 : 0), beta: PRIOR_BETA + (success ? 0 : 1), samples: 1, updated_at: new Date(now),
    })
    .onConflict(['org_id', 'provider', 'work_type'])
    .merge({
      alpha: trx.raw('router_arms.alpha + ?', [success ? 1 : 0]),
      beta: trx.raw('router_arms.beta + ?', [success ? 0 : 1]),
      samples: trx.raw('router_arms.samples + 1'),
      updated_at: new Date(now),
    });
}
