// Invariant: a session's durable changes tell workers exactly what they must act on: entering the queue offers the
// session (or, behind a tracker issue, asks the project's workers to poll); losing its holder other than by the
// holder's own report sends that worker a stop (declared by the machine); a queued prompt asks the holder to poll; a follow-up (a prompt to an
// ended session) asks only the worker that ran it to poll; nothing else is sent.
import { expect } from 'chai';
import { runCommand } from '../../support/harness.js';
import { createSessionBehavior, initialSessionState, publicSessionId, sessionKey, type SessionMsg, type SessionState } from '../../../actors/kinds/session/index.js';
import { workerSignalsOf, type WorkerSignal, type WorkerSignalBatch } from '../../../actors/kinds/session/worker-signals.js';

const behavior = createSessionBehavior();
const ORG = '11111111-1111-4111-8111-111111111111';
const PROJECT = '22222222-2222-4222-8222-222222222222';
const key = sessionKey(ORG, 't-1');
/** Workers are told sessions' public ids, never the key the actor lives under. */
const id = publicSessionId('t-1');
const dispatch = (trackerIssue: string | null): SessionMsg => ({
  type: 'session.dispatch', orgId: ORG, projectId: PROJECT, trackerSessionId: 't-1', prompt: 'Fix it',
  agentCardId: null, trackerIssue, workType: 'fix', provider: null, requestedBy: 'apiKey:k',
});

/**
 * Runs `messages` from the initial state; returns what the last one tells workers, in the order a node sends it: the
 * announcements derived from the change, then the stops the machine declared (`workerStopped`).
 */
function signalsAfter(messages: SessionMsg[]): WorkerSignalBatch | undefined {
  let state: SessionState = initialSessionState();
  let told: WorkerSignal[] = [];
  for (const m of messages) {
    const r = runCommand(behavior, state, m, { id: key });
    if (!r.ok) throw new Error(`${m.type} refused: ${JSON.stringify(r)}`);
    const stops = r.effects.flatMap((e): WorkerSignal[] =>
      (e.type === 'workerStopped' ? [{ kind: 'stop', workerId: e.workerId, sessionId: e.sessionId, status: e.status, reason: e.reason }] : []));
    told = [...(workerSignalsOf(state, r.state, key, m)?.signals ?? []), ...stops];
    state = r.state;
  }
  return told.length === 0 ? undefined : { orgId: ORG, signals: told };
}

const claim: SessionMsg = { type: 'session.transition', orgId: ORG, projectIds: [PROJECT], status: 'claimed', workerId: 'w1' };
const run: SessionMsg = { type: 'session.transition', orgId: ORG, projectIds: [PROJECT], status: 'running', workerId: 'w1' };
const stop: SessionMsg = { type: 'session.stop', requestedBy: 'user:u' };

describe('worker signals of session changes', () => {
  it('offers a new session, and asks for a poll when a tracker issue may hold it back', () => {
    expect(signalsAfter([dispatch(null)])).to.deep.equal({
      orgId: ORG, signals: [{ kind: 'offer', projectId: PROJECT, session: { id, projectId: PROJECT, prompt: 'Fix it', workType: 'fix', run: 1 } }],
    });
    const repository = { id: '33333333-3333-4333-8333-333333333333', url: 'git@github.com:acme/app.git', name: 'app', defaultBranch: 'main' };
    const onRepository = { ...dispatch(null), repository, ref: 'feature/x', agent: 'codex' } as SessionMsg;
    expect(signalsAfter([onRepository])!.signals).to.deep.equal([{
      kind: 'offer', projectId: PROJECT,
      session: { id, projectId: PROJECT, prompt: 'Fix it', workType: 'fix', repository, ref: 'feature/x', agent: 'codex', run: 1 },
    }]);
    expect(signalsAfter([dispatch('ENG-1')])!.signals).to.deep.equal([{ kind: 'poll', projectId: PROJECT }]);
  });

  it('sends the holder a stop when a user stops it or its lease is lost, never for its own reports', () => {
    expect(signalsAfter([dispatch(null), claim])).to.equal(undefined);
    expect(signalsAfter([dispatch(null), claim, run])).to.equal(undefined);
    expect(signalsAfter([dispatch(null), claim, run, stop])!.signals)
      .to.deep.equal([{ kind: 'stop', workerId: 'w1', sessionId: id, status: 'stopped', reason: 'stopped' }]);
    const reclaimed = signalsAfter([dispatch(null), claim, run, { type: 'session.leaseExpired', workerId: 'w1' }])!.signals;
    expect(reclaimed.map((s) => s.kind)).to.deep.equal(['offer', 'stop']);
    expect(reclaimed[1]).to.deep.include({ workerId: 'w1', status: 'pending' });
    const finalize: SessionMsg = { type: 'session.transition', orgId: ORG, projectIds: [PROJECT], status: 'finalizing', workerId: 'w1' };
    expect(signalsAfter([dispatch(null), claim, run, finalize, { type: 'session.transition', orgId: ORG, projectIds: [PROJECT], status: 'completed', workerId: 'w1' }])).to.equal(undefined);
    expect(signalsAfter([dispatch(null), claim, run, finalize, stop]), 'the agent has exited by finalizing').to.equal(undefined);
  });

  it('asks the holder to poll for a queued prompt, and the project after an issue session ends', () => {
    const prompt: SessionMsg = { type: 'session.prompt', promptId: 'p1', prompt: 'more', requestedBy: 'user:u' };
    expect(signalsAfter([dispatch(null), claim, run, prompt])!.signals).to.deep.equal([{ kind: 'prompt', workerId: 'w1', sessionId: id }]);
    expect(signalsAfter([dispatch(null), prompt]), 'nobody holds a pending session').to.equal(undefined);
    expect(signalsAfter([dispatch('ENG-1'), claim, run, stop])!.signals.map((s) => s.kind)).to.deep.equal(['poll', 'stop']);
  });

  it('marks a keyed session\'s offer with its key, and asks the project to poll when a keyed session ends (decision 0081)', () => {
    const keyed = { ...dispatch(null), concurrencyKey: 'branch:main' } as SessionMsg;
    expect(signalsAfter([keyed])!.signals).to.deep.equal([{
      kind: 'offer', projectId: PROJECT, concurrencyKey: 'branch:main', session: { id, projectId: PROJECT, prompt: 'Fix it', workType: 'fix', run: 1 },
    }]);
    const complete = (status: string): SessionMsg => ({ type: 'session.transition', orgId: ORG, projectIds: [PROJECT], status, workerId: 'w1' } as SessionMsg);
    expect(signalsAfter([keyed, claim, run, complete('finalizing'), complete('completed')])!.signals).to.deep.equal([{ kind: 'poll', projectId: PROJECT }]);
    expect(signalsAfter([keyed, claim, run, stop])!.signals.map((s) => s.kind)).to.deep.equal(['poll', 'stop']);
  });

  it('sends a follow-up only to the worker that ran it, as a nudge to poll (the poll reads the conversation to resume)', () => {
    const prompt: SessionMsg = { type: 'session.prompt', promptId: 'p2', prompt: 'and the docs', requestedBy: 'user:u' };
    const finalize: SessionMsg = { type: 'session.transition', orgId: ORG, projectIds: [PROJECT], status: 'finalizing', workerId: 'w1' };
    const complete: SessionMsg = { type: 'session.transition', orgId: ORG, projectIds: [PROJECT], status: 'completed', workerId: 'w1' };
    expect(signalsAfter([dispatch(null), claim, run, finalize, complete, prompt])!.signals).to.deep.equal([{ kind: 'followUp', workerId: 'w1', sessionId: id }]);
    // Never claimed: no worker holds a workspace, so the project's workers poll for it.
    expect(signalsAfter([dispatch(null), stop, prompt])!.signals).to.deep.equal([{ kind: 'poll', projectId: PROJECT }]);
    // A follow-up whose worker lost the lease goes back to the project's workers the same way.
    const lost = signalsAfter([dispatch(null), claim, run, finalize, complete, prompt, claim, run, { type: 'session.leaseExpired', workerId: 'w1' }])!.signals;
    expect(lost.map((s) => s.kind)).to.deep.equal(['poll', 'stop']);
  });
});
