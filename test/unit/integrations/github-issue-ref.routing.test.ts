// Invariant: a trackerIssue derived from a provider delivery obeys the same rule as a dispatched one: a GitHub issue
// whose repository full_name is not a valid owner/repo dispatches nothing (ignored with a reason), and a Linear
// identifier shaped like a bad GitHub reference is not kept as the session's trackerIssue (issue 30, finding 7).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { planRoute } from '../../../actors/services/integrations/webhooks/routing.js';
import { githubIssueOpened } from '../../support/provider-payloads.js';

const orgId = randomUUID();

describe('webhook routing: tracker issue references', () => {
  for (const repo of ['../..', 'acme/..', './x', 'a%2F..', 'acme/api/extra']) {
    it(`a GitHub issue in repository ${JSON.stringify(repo)} is ignored`, () => {
      const plan = planRoute(orgId, 'github', 'issues.opened', githubIssueOpened({ repo, number: 2, title: 'T', body: '', nodeId: 'I_1' }));
      expect(plan).to.deep.include({ kind: 'ignore' });
      expect((plan as { reason: string }).reason).to.match(/full_name/);
    });
  }

  it('a valid repository still dispatches', () => {
    const plan = planRoute(orgId, 'github', 'issues.opened', githubIssueOpened({ repo: 'acme/.github', number: 2, title: 'T', body: '', nodeId: 'I_1' }));
    expect(plan).to.include({ kind: 'dispatchSession', trackerIssue: 'acme/.github#2' });
  });

  it('a Linear identifier that is a bad GitHub reference is dropped, the issue still dispatched', () => {
    const body = { type: 'Issue', action: 'create', data: { id: 'lin-1', title: 'Crash', identifier: '../..#2' } };
    expect(planRoute(orgId, 'linear', 'Issue.create', body)).to.include({ kind: 'dispatchSession', trackerIssue: null, prompt: 'Crash' });
    const good = { ...body, data: { ...body.data, identifier: 'ENG-9' } };
    expect(planRoute(orgId, 'linear', 'Issue.create', good)).to.include({ trackerIssue: 'ENG-9' });
  });
});
