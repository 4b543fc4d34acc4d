// Invariant: every session status × message pair is either a move the transition table allows (and the reply names
// the resulting status) or an explicit rejection that leaves the state exactly as it was, and every target the table
// lists is reached; terminal moves always carry exactly one keyed terminal effect, and a repeated or racing message
// never produces a second one.
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { runCommand, harnessNow } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import {
  createSessionBehavior, initialSessionState, publicSessionId, sessionKey, reportableStatuses, isHeld, isTerminal, MAX_LEASE_RECLAIMS,
  type SessionEffect, type SessionMsg, type SessionReply, type SessionState, type SessionStatus,
} from '../../../actors/kinds/session/index.js';

const behavior = createSessionBehavior();
const ORG = '11111111-1111-4111-8111-111111111111';
const PROJECT = '22222222-2222-4222-8222-222222222222';
const id = sessionKey(ORG, 'tracker-session-1');
/** The reporting worker's org and projects, as the status route passes them from its runtime token. */
const scope = { orgId: ORG, projectIds: [PROJECT] };

const dispatch: SessionMsg = {
  type: 'session.dispatch', orgId: ORG, projectId: PROJECT, trackerSessionId: 'tracker-session-1', prompt: 'Fix the bug',
  agentCardId: null, trackerIssue: 'ENG-1', workType: null, provider: null, requestedBy: 'apiKey:k',
};

/** A session in `status`, held by worker w1 where a worker holds it. */
function stateIn(status: SessionStatus): SessionState {
  if (status === 'absent') return initialSessionState();
  const base = runCommand(behavior, initialSessionState(), dispatch, { id });
  if (!base.ok) throw new Error('dispatch failed');
  return { ...base.state, status, workerId: status === 'pending' ? null : 'w1', epoch: 1 };
}

/** Each status as fixture; a held one also after its last allowed lease reclaim (a lost lease then fails it). */
function statesIn(status: string): SessionState[] {
  const state = stateIn(status as SessionStatus);
  return isHeld(state.status) ? [state, { ...state, leaseReclaims: MAX_LEASE_RECLAIMS }] : [state];
}

/**
 * One representative message per type; `session.transition` is tried against every reportable target, with a cost
 * (news) and without (what a retry of an ended session's last report carries).
 */
function messagesOf(type: string): SessionMsg[] {
  switch (type as SessionMsg['type']) {
    case 'session.dispatch': return [dispatch];
    case 'session.transition':
      return reportableStatuses.flatMap((status): SessionMsg[] => [
        { type: 'session.transition', ...scope, status, workerId: 'w1', costUsd: 1.5 },
        { type: 'session.transition', ...scope, status, workerId: 'w1' },
      ]);
    case 'session.stop': return [{ type: 'session.stop', requestedBy: 'user:u' }];
    case 'session.prompt': return [{ type: 'session.prompt', promptId: 'p-1', prompt: 'More', requestedBy: 'user:u' }];
    case 'session.leaseExpired': return [{ type: 'session.leaseExpired', workerId: 'w1' }];
  }
}

/** Every reply names the status the session is in afterwards. */
function statusNamedBy(reply: SessionReply): SessionStatus {
  return reply.kind === 'transitioned' || reply.kind === 'stopped' ? reply.newStatus : reply.status;
}

walkTable(behavior, {
  title: 'session machine: every status × message pair, from its table',
  statesIn,
  messagesOf,
  ctx: { id, now: harnessNow + 1000 },
  refusedWith: (from) => (from === 'absent' ? 'NOT_FOUND' : 'ILLEGAL_TRANSITION'),
  accepted(result, from) {
    const next = result.state as SessionState;
    expect(statusNamedBy(result.reply as SessionReply), 'the reply names the resulting status').to.equal(next.status);
    const terminalEffects = result.effects.filter((e) => (e as SessionEffect).type === 'terminal');
    const enteredTerminal = isTerminal(next.status) && !isTerminal(from as SessionStatus);
    expect(terminalEffects, 'one terminal effect exactly when entering a terminal status').to.have.length(enteredTerminal ? 1 : 0);
  },
});

describe('session machine', () => {
  it('public id is the first 16 hex characters of SHA-256 of the tracker session id, and the key is org-scoped', () => {
    expect(publicSessionId('abc')).to.equal(createHash('sha256').update('abc').digest('hex').slice(0, 16));
    // The same tracker id in another org has the same public id but lives under another key (issue 16, decision 0068).
    const key = createHash('sha256').update(`${ORG}:abc`).digest('hex').slice(0, 16);
    expect(sessionKey(ORG, 'abc')).to.equal(key);
    expect(sessionKey(PROJECT, 'abc')).to.not.equal(key);
  });

  it('stop on a terminal session answers stopped:false with both statuses the terminal one and changes nothing', () => {
    const before = stateIn('completed');
    const result = runCommand(behavior, before, { type: 'session.stop', requestedBy: 'u' }, { id });
    expect(result.ok).to.equal(true);
    if (!result.ok) return;
    expect(result.reply).to.deep.include({ stopped: false, previousStatus: 'completed', newStatus: 'completed' });
    expect(result.changed).to.equal(false);
    expect(result.effects).to.have.length(0);
  });

  it('stop from a live state posts "Stop signal received" and one terminal effect; a second stop does nothing', () => {
    const first = runCommand(behavior, stateIn('running'), { type: 'session.stop', requestedBy: 'u' }, { id });
    expect(first.ok).to.equal(true);
    if (!first.ok) return;
    expect(first.reply).to.deep.include({ stopped: true, previousStatus: 'running', newStatus: 'stopped' });
    const activity = first.effects.find((e) => e.type === 'activity');
    expect(activity).to.deep.include({ body: 'Stop signal received' });
    const second = runCommand(behavior, first.state, { type: 'session.stop', requestedBy: 'u' }, { id });
    expect(second.ok && second.effects.length).to.equal(0);
  });

  it('stop racing finalize: whichever comes second finds a terminal session and adds no effect', () => {
    const finalizing = stateIn('finalizing');
    const completed = runCommand(behavior, finalizing, { type: 'session.transition', ...scope, status: 'completed', workerId: 'w1' }, { id });
    expect(completed.ok).to.equal(true);
    if (!completed.ok) return;
    const stop = runCommand(behavior, completed.state, { type: 'session.stop', requestedBy: 'u' }, { id });
    expect(stop.ok && stop.reply).to.deep.include({ stopped: false, newStatus: 'completed' });
    const stoppedFirst = runCommand(behavior, finalizing, { type: 'session.stop', requestedBy: 'u' }, { id });
    if (!stoppedFirst.ok) throw new Error('stop refused');
    const lateFinalize = runCommand(behavior, stoppedFirst.state, { type: 'session.transition', ...scope, status: 'completed', workerId: 'w1' }, { id });
    expect(lateFinalize.ok).to.equal(false);
    if (!lateFinalize.ok) expect(lateFinalize.rejection.code).to.equal('ILLEGAL_TRANSITION');
  });

  it('the holding worker repeating the end already reached is answered as done; other reports on an end stay illegal (issue 30)', () => {
    for (const end of ['completed', 'failed', 'stopped'] as const) {
      const ended = runCommand(behavior, stateIn('finalizing'), { type: 'session.transition', ...scope, status: end, workerId: 'w1' }, { id });
      if (!ended.ok) throw new Error(`${end} refused`);
      const retried = runCommand(behavior, ended.state, { type: 'session.transition', ...scope, status: end, workerId: 'w1' }, { id });
      expect(retried.ok, `${end} retried`).to.equal(true);
      if (!retried.ok) continue;
      expect(retried.changed).to.equal(false);
      expect(retried.effects).to.deep.equal([]);
      expect(retried.reply).to.deep.include({ kind: 'transitioned', previousStatus: end, newStatus: end });
      const otherWorker = runCommand(behavior, ended.state, { type: 'session.transition', ...scope, status: end, workerId: 'w2' }, { id });
      expect(otherWorker.ok).to.equal(false);
      const news = runCommand(behavior, ended.state, { type: 'session.transition', ...scope, status: end, workerId: 'w1', costUsd: 99 }, { id });
      expect(news.ok, 'a repeat carrying a new cost is not a retry').to.equal(false);
      const otherEnd = runCommand(behavior, ended.state, { type: 'session.transition', ...scope, status: end === 'failed' ? 'completed' : 'failed', workerId: 'w1' }, { id });
      expect(otherEnd.ok).to.equal(false);
      if (!otherEnd.ok) expect(otherEnd.rejection.code).to.equal('ILLEGAL_TRANSITION');
    }
  });

  it('two workers claiming the same session: exactly one wins', () => {
    const pending = stateIn('pending');
    const a = runCommand(behavior, pending, { type: 'session.transition', ...scope, status: 'claimed', workerId: 'wa' }, { id });
    if (!a.ok) throw new Error('first claim refused');
    const b = runCommand(behavior, a.state, { type: 'session.transition', ...scope, status: 'claimed', workerId: 'wb' }, { id });
    expect(b.ok).to.equal(false);
    if (!b.ok) expect(b.rejection.code).to.equal('ILLEGAL_TRANSITION');
    const again = runCommand(behavior, a.state, { type: 'session.transition', ...scope, status: 'claimed', workerId: 'wa' }, { id });
    expect(again.ok && again.changed).to.equal(false);
  });

  it('prompt on a terminal session re-dispatches it as pending under a new epoch; on running it stays running', () => {
    const done = stateIn('failed');
    const re = runCommand(behavior, done, { type: 'session.prompt', promptId: 'p2', prompt: 'Try again', requestedBy: 'u' }, { id });
    expect(re.ok).to.equal(true);
    if (!re.ok) return;
    expect(re.reply).to.deep.include({ status: 'pending', delivered: true });
    expect(re.state).to.deep.include({ status: 'pending', epoch: 2, workerId: null, prompt: 'Try again' });
    const live = runCommand(behavior, stateIn('running'), { type: 'session.prompt', promptId: 'p3', prompt: 'Also', requestedBy: 'u' }, { id });
    expect(live.ok && live.reply).to.deep.include({ status: 'running' });
  });

  it('a lost lease returns a running session to pending, and fails it after too many reclaims or when finalizing', () => {
    const reclaimed = runCommand(behavior, stateIn('running'), { type: 'session.leaseExpired', workerId: 'w1' }, { id });
    expect(reclaimed.ok && reclaimed.state).to.deep.include({ status: 'pending', workerId: null, leaseReclaims: 1 });
    const tooMany = runCommand(behavior, { ...stateIn('running'), leaseReclaims: 3 }, { type: 'session.leaseExpired', workerId: 'w1' }, { id });
    expect(tooMany.ok && tooMany.state.status).to.equal('failed');
    const stale = runCommand(behavior, stateIn('running'), { type: 'session.leaseExpired', workerId: 'another' }, { id });
    expect(stale.ok && stale.changed).to.equal(false);
  });

  it('a worker that does not hold the session cannot move it', () => {
    const result = runCommand(behavior, stateIn('running'), { type: 'session.transition', ...scope, status: 'finalizing', workerId: 'intruder' }, { id });
    expect(result.ok).to.equal(false);
  });

  it('a worker of another org, or of none of its projects, hears NOT_FOUND in every status and changes nothing', () => {
    const OTHER = '33333333-3333-4333-8333-333333333333';
    for (const status of ['pending', 'claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] as const) {
      const before = stateIn(status);
      for (const outside of [{ orgId: OTHER, projectIds: [PROJECT] }, { orgId: ORG, projectIds: [OTHER] }, { orgId: ORG, projectIds: [] }]) {
        // `completed` from `finalizing` would be legal, and `claimed` from `running` illegal: neither may show.
        for (const target of ['claimed', 'completed'] as const) {
          const result = runCommand(behavior, before, { type: 'session.transition', ...outside, status: target, workerId: 'w1' }, { id });
          expect(result.ok, `${status} → ${target} from outside`).to.equal(false);
          if (!result.ok) expect(result.rejection.code).to.equal('NOT_FOUND');
        }
      }
    }
  });

  it('hostile messages are refused before decide', () => {
    for (const msg of [
      { type: 'session.transition', ...scope, status: 'exploded', workerId: 'w1' },
      { type: 'session.transition', ...scope, status: 'running', workerId: 'w1', costUsd: -1 },
      { type: 'session.prompt', promptId: 'x', prompt: '', requestedBy: 'u' },
      { type: 'session.nope' },
    ]) {
      const result = runCommand(behavior, stateIn('running'), msg, { id });
      expect(result.ok).to.equal(false);
      if (!result.ok) expect(result.rejection.code).to.equal('VALIDATION_FAILED');
    }
  });
});
