// Invariant: every status × message pair of the provider-event machine is a transition its table allows or an
// explicit ILLEGAL_TRANSITION; a delivery asks for at most one session dispatch however often it is redelivered;
// a Linear issue creation plans a dispatch keyed by (org, issue), so two orgs never share a session (the other
// providers' plans are table-tested in webhooks.routing.test.ts).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { runCommand } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import { createProviderEventBehavior } from '../../../actors/services/integrations/webhooks/actor.js';
import type { ProviderEventState } from '../../../actors/services/integrations/webhooks/machine.js';
import { planRoute } from '../../../actors/services/integrations/webhooks/routing.js';
import { eventMatches, webhookRunId } from '../../../actors/services/integrations/webhooks/workflow-triggers.js';

const behavior = createProviderEventBehavior({ ask: () => Promise.reject(new Error('not used in table tests')) });
const orgId = randomUUID();
const projectId = randomUUID();
const dispatchAction = { kind: 'dispatchSession', trackerSessionId: `linear:${orgId}:i1`, trackerIssue: 'ENG-1', prompt: 'ENG-1: fix' } as const;
const route = (action: unknown = dispatchAction, project: string | null = projectId) =>
  ({ type: 'providerEvent.route', orgId, provider: 'linear', eventType: 'Issue.create', projectId: project, action });
const messages = {
  'providerEvent.route': route(),
  'providerEvent.dispatched': { type: 'providerEvent.dispatched', sessionId: 'abcdef0123456789' },
  'providerEvent.dispatchFailed': { type: 'providerEvent.dispatchFailed', error: 'boom' },
  'providerEvent.runsStarted': { type: 'providerEvent.runsStarted', runIds: [randomUUID()], failures: [] },
} as const;
const workflowId = randomUUID();
const startRuns = { kind: 'startRuns', runs: [{ workflowId, projectId, version: 3 }], input: { action: 'opened' } } as const;

function stateIn(status: ProviderEventState['status']): ProviderEventState {
  const absent = behavior.initial('e');
  if (status === 'absent') return absent;
  const first = runCommand(behavior, absent, status === 'ignored' ? route({ kind: 'ignore', reason: 'x' }) : route());
  if (!first.ok) throw new Error('route failed');
  if (status === 'routing' || status === 'ignored') return first.state;
  const next = runCommand(behavior, first.state, status === 'routed' ? messages['providerEvent.dispatched'] : messages['providerEvent.dispatchFailed']);
  if (!next.ok) throw new Error(`could not reach ${status}`);
  return next.state;
}

/** The first route's action decides where the event goes: a dispatch, a note on a session, nothing, or nowhere to go. */
const firstRoutes = [
  route(),
  route({ kind: 'recordSessionActivity', sessionId: 'abcdef0123456789', activityKind: 'ci.failed', body: 'CI failed' }),
  route({ kind: 'ignore', reason: 'not for us' }),
  route(dispatchAction, null),
  route(startRuns),
];

walkTable(behavior, {
  title: 'provider-event machine: every status × message pair, from its table',
  statesIn: (status) => [stateIn(status as ProviderEventState['status'])],
  messagesOf: (type, state) => (type === 'providerEvent.route' && state.status === 'absent' ? firstRoutes : [messages[type as keyof typeof messages]]),
  refusedWith: () => 'ILLEGAL_TRANSITION',
});

describe('provider-event machine', () => {
  it('asks for one dispatch on the first route and none on redeliveries', () => {
    const first = runCommand(behavior, behavior.initial('e'), route());
    expect(first.ok && first.effects).to.deep.equal([{
      type: 'dispatchSession', orgId, projectId, trackerSessionId: dispatchAction.trackerSessionId, trackerIssue: 'ENG-1', prompt: 'ENG-1: fix', provider: 'linear',
    }]);
    for (const status of ['routing', 'routed', 'failed', 'ignored'] as const) {
      const again = runCommand(behavior, stateIn(status), route());
      expect(again.ok && again.effects, status).to.deep.equal([]);
      expect(again.ok && again.changed, status).to.equal(false);
    }
  });

  it('asks to start the triggered runs under ids derived from the delivery, and records them once started', () => {
    const first = runCommand(behavior, behavior.initial('event-1'), route(startRuns), { id: 'event-1' });
    if (!first.ok) throw new Error(first.rejection.message);
    expect(first.state.status).to.equal('routing');
    expect(first.effects).to.deep.equal([{
      type: 'startRuns', orgId, provider: 'linear', eventType: 'Issue.create', input: { action: 'opened' },
      runs: [{ workflowId, projectId, version: 3, runId: webhookRunId('event-1', workflowId) }],
    }]);
    expect(webhookRunId('event-1', workflowId)).to.not.equal(webhookRunId('event-2', workflowId));
    const runId = webhookRunId('event-1', workflowId);
    const done = runCommand(behavior, first.state, { type: 'providerEvent.runsStarted', runIds: [runId], failures: [] });
    expect(done.ok && done.state).to.include({ status: 'routed', detail: null });
    expect(done.ok && done.state.runIds).to.deep.equal([runId]);
    const again = runCommand(behavior, done.ok ? done.state : first.state, route(startRuns));
    expect(again.ok && again.effects).to.deep.equal([]);
  });

  it('matches webhook triggers by event (whole segments)', () => {
    expect(eventMatches('issues.opened', 'issues.opened')).to.equal(true);
    expect(eventMatches('issues', 'issues.opened')).to.equal(true);
    expect(eventMatches('issue', 'issues.opened')).to.equal(false);
    expect(eventMatches('issues.closed', 'issues.opened')).to.equal(false);
  });

  it('fails a dispatch without a project, and refuses malformed messages', () => {
    const noProject = runCommand(behavior, behavior.initial('e'), route(dispatchAction, null));
    expect(noProject.ok && noProject.state.status).to.equal('failed');
    expect(runCommand(behavior, behavior.initial('e'), { ...route(), extra: 1 }).ok).to.equal(false);
    expect(runCommand(behavior, behavior.initial('e'), route({ kind: 'dispatchSession', trackerSessionId: 'x', trackerIssue: null, prompt: '' })).ok).to.equal(false);
  });

  it('plans a dispatch for a Linear issue creation, keyed by org and issue', () => {
    const issue = { type: 'Issue', action: 'create', data: { id: 'i-1', identifier: 'ENG-7', title: 'Crash', description: 'Stack trace' } };
    expect(planRoute(orgId, 'linear', 'Issue.create', issue)).to.deep.equal({
      kind: 'dispatchSession', trackerSessionId: `linear:${orgId}:i-1`, trackerIssue: 'ENG-7', prompt: 'ENG-7: Crash\n\nStack trace',
    });
    const otherOrg = planRoute(randomUUID(), 'linear', 'Issue.create', issue);
    expect(otherOrg.kind === 'dispatchSession' && otherOrg.trackerSessionId).to.not.equal(`linear:${orgId}:i-1`);
    expect(planRoute(orgId, 'linear', 'Issue.update', { ...issue, action: 'update' }).kind).to.equal('ignore');
    expect(planRoute(orgId, 'linear', 'Issue.create', { type: 'Issue', action: 'create', data: { id: 'i' } }).kind).to.equal('ignore');
    expect(planRoute(orgId, 'linear', 'Issue.create', { type: 'Issue', action: 'create', data: 'x' }).kind).to.equal('ignore');
    expect(planRoute(orgId, 'github', 'issues.opened', issue).kind).to.equal('ignore');
  });
});
