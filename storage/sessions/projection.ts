import type { Knex } from 'knex';
import type { SessionEffect, SessionState } from '../../schemas/sessions/session-state.js';

const isTerminal = (status: string): boolean => status === 'completed' || status === 'failed' || status === 'stopped';

/**
 * The session actor's read models, written inside its snapshot transaction (so they never disagree with what it
 * answered). Terminal effects are recorded under an idempotency key in `session_effect_ledger` first: a replayed
 * projection (a crash after the write, a retried message) finds the key and does nothing twice.
 */

const ts = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

export async function projectSession(
  trx: Knex.Transaction, id: string, next: SessionState, previous: SessionState, effects: readonly SessionEffect[], now: number,
): Promise<void> {
  const spec = next.spec;
  if (spec === null) return;
  for (const effect of effects) {
    switch (effect.type) {
      case 'sessionWritten':
        await writeSessionRow(trx, id, next, previous);
        break;
      case 'promptRecorded':
        await trx('session_prompts').insert({
          id: effect.promptId, session_id: id, org_id: spec.orgId, epoch: next.epoch, text: effect.text,
          queued: effect.queued, created_at: new Date(now),
        }).onConflict('id').ignore();
        break;
      case 'activity':
        await trx('session_activities').insert({
          id: effect.key, session_id: id, org_id: spec.orgId, kind: effect.kind, body: effect.body, created_at: new Date(now),
        }).onConflict('id').ignore();
        break;
      case 'terminal':
        await runTerminalEffects(trx, id, next, effect, now);
        break;
    }
  }
}

async function writeSessionRow(trx: Knex.Transaction, id: string, s: SessionState, previous: SessionState): Promise<void> {
  const spec = s.spec!;
  const row = {
    status: s.status,
    // Claim released: a terminal session is held by nobody, whatever worker ran it.
    worker_id: isTerminal(s.status) ? null : s.workerId,
    ...(s.workerId === null ? {} : { last_worker_id: s.workerId }), epoch: s.epoch, cost_usd: s.costUsd, error: s.error, phase: s.phase,
    prompt: s.prompt, updated_at: new Date(s.updatedAt), claimed_at: ts(s.claimedAt), started_at: ts(s.startedAt),
    finished_at: ts(s.finishedAt),
  };
  if (previous.status === 'absent') {
    await trx('sessions').insert({
      id, org_id: spec.orgId, project_id: spec.projectId, tracker_session_id: spec.trackerSessionId,
      tracker_issue: spec.trackerIssue, agent_card_id: spec.agentCardId, work_type: spec.workType, provider: spec.provider,
      requested_by: spec.requestedBy, created_at: new Date(s.createdAt), lock_state: 'none', ...row,
    }).onConflict('id').merge(row);
  } else {
    await trx('sessions').where({ id }).update(row);
  }
  if (s.status !== previous.status) {
    await trx('session_transitions').insert({
      id: `${s.updatedAt}.${id}.${s.epoch}.${s.status}`, session_id: id, org_id: spec.orgId, epoch: s.epoch,
      from_status: previous.status, to_status: s.status, worker_id: s.workerId, at: new Date(s.updatedAt),
    }).onConflict('id').ignore();
  }
  // A session (re-)entering the queue with a tracker issue takes the issue's lock, or waits for it.
  if (s.status === 'pending' && previous.status !== 'pending' && spec.trackerIssue !== null) {
    await acquireIssueLock(trx, spec.orgId, spec.trackerIssue, id, s.updatedAt);
  }
}

/**
 * Serialises everything done to one issue's lock (acquire, release, promote) on a transaction-scoped advisory
 * lock, so a release can never miss a waiter whose own transaction was still in flight.
 */
async function lockIssue(trx: Knex.Transaction, orgId: string, issue: string): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 7))', [`${orgId}:${issue}`]);
}

async function acquireIssueLock(trx: Knex.Transaction, orgId: string, issue: string, sessionId: string, now: number): Promise<void> {
  await lockIssue(trx, orgId, issue);
  const taken = await trx('session_issue_locks')
    .insert({ org_id: orgId, tracker_issue: issue, session_id: sessionId, acquired_at: new Date(now) })
    .onConflict(['org_id', 'tracker_issue']).ignore()
    .returning('session_id');
  const holder = taken[0]?.session_id ?? (await trx('session_issue_locks').where({ org_id: orgId, tracker_issue: issue }).first('session_id'))?.session_id;
  await trx('sessions').where({ id: sessionId }).update({ lock_state: holder === sessionId ? 'held' : 'waiting' });
}

/**
 * Everything spec 3.1 says happens on a terminal transition, once per run: cost persisted (the session row,
 * already written), fleet quota accounted, claim released, inbox archived, issue lock released and the next
 * waiting session for the issue promoted. The tracker activity is its own keyed effect.
 */
async function runTerminalEffects(
  trx: Knex.Transaction, id: string, s: SessionState, effect: Extract<SessionEffect, { type: 'terminal' }>, now: number,
): Promise<void> {
  const recorded = await trx('session_effect_ledger').insert({ key: effect.key, recorded_at: new Date(now) })
    .onConflict('key').ignore().returning('key');
  if (recorded.length === 0) return;
  const spec = s.spec!;
  const period = new Date(now).toISOString().slice(0, 7);
  await trx('fleet_quota_usage')
    .insert({ org_id: spec.orgId, period, sessions: 1, cost_usd: effect.costUsd })
    .onConflict(['org_id', 'period'])
    .merge({
      sessions: trx.raw('fleet_quota_usage.sessions + 1'),
      cost_usd: trx.raw('fleet_quota_usage.cost_usd + excluded.cost_usd'),
    });
  // Claim released: no worker holds a terminal session.
  await trx('sessions').where({ id }).update({ worker_id: null });
  await trx('session_prompts').where({ session_id: id }).whereNull('archived_at').update({ archived_at: new Date(now) });
  if (spec.trackerIssue !== null) await releaseIssueLock(trx, spec.orgId, spec.trackerIssue, id, now);
}

async function releaseIssueLock(trx: Knex.Transaction, orgId: string, issue: string, sessionId: string, now: number): Promise<void> {
  await lockIssue(trx, orgId, issue);
  const released = await trx('session_issue_locks').where({ org_id: orgId, tracker_issue: issue, session_id: sessionId }).del();
  await trx('sessions').where({ id: sessionId }).update({ lock_state: 'none' });
  if (released === 0) return;
  const next = await trx('sessions')
    .where({ org_id: orgId, tracker_issue: issue, status: 'pending', lock_state: 'waiting' })
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .first('id');
  if (next === undefined) return;
  await trx('session_issue_locks').insert({ org_id: orgId, tracker_issue: issue, session_id: next.id, acquired_at: new Date(now) });
  await trx('sessions').where({ id: next.id }).update({ lock_state: 'held' });
}
