// Invariant: planRoute turns a verified provider event into at most one thing to do, from the event alone. A GitHub
// issue opened by a person dispatches a session keyed by (org, issue), never one opened by a bot; a failed GitHub
// check run or workflow run, or a failed Vercel deployment, on a `troupe/<sessionId>` branch becomes one note on
// that session; everything else — other actions, passing runs, other branches, pull requests, malformed bodies — is
// ignored with a reason. Payloads are shaped like the providers' own examples (test/support/provider-payloads.ts).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { planRoute } from '../../../actors/services/integrations/webhooks/routing.js';
import type { WebhookProvider } from '../../../actors/services/integrations/webhooks/providers.js';
import { MAX_PROMPT_LENGTH } from '../../../schemas/sessions/session-actor.js';
import {
  githubCheckRunCompleted, githubIssueOpened, githubPullRequestOpened, githubWorkflowRunCompleted, vercelDeployment,
} from '../../support/provider-payloads.js';

const orgId = randomUUID();
const sessionId = '0123456789abcdef';

describe('webhook routing plans', () => {
  describe('GitHub issues', () => {
    it('an issue opened by a person dispatches a session keyed by org and issue node id', () => {
      const body = githubIssueOpened({ repo: 'acme/app', number: 12, title: 'Crash on login', body: 'Stack trace here', nodeId: 'I_kwDOABC123' });
      expect(planRoute(orgId, 'github', 'issues.opened', body)).to.deep.equal({
        kind: 'dispatchSession', trackerSessionId: `github:${orgId}:I_kwDOABC123`, trackerIssue: 'acme/app#12',
        prompt: 'acme/app#12: Crash on login\n\nStack trace here',
      });
      const otherOrgId = randomUUID();
      expect(planRoute(otherOrgId, 'github', 'issues.opened', body)).to.include({ kind: 'dispatchSession', trackerSessionId: `github:${otherOrgId}:I_kwDOABC123` });
    });

    it('falls back to repository id and number without a node id; an empty body leaves the heading alone', () => {
      const plan = planRoute(orgId, 'github', 'issues.opened', githubIssueOpened({ repo: 'acme/app', repositoryId: 77, number: 3, title: 'T', body: null, nodeId: null }));
      expect(plan).to.deep.equal({ kind: 'dispatchSession', trackerSessionId: `github:${orgId}:77#3`, trackerIssue: 'acme/app#3', prompt: 'acme/app#3: T' });
    });

    it('caps the prompt like a Linear one', () => {
      const plan = planRoute(orgId, 'github', 'issues.opened', githubIssueOpened({ body: 'x'.repeat(MAX_PROMPT_LENGTH + 10) }));
      expect(plan.kind === 'dispatchSession' && plan.prompt.length).to.equal(MAX_PROMPT_LENGTH);
    });

    const ignored: [string, string, Record<string, unknown>, RegExp][] = [
      ['opened by a bot', 'issues.opened', githubIssueOpened({ senderType: 'Bot' }), /bot.*loop/],
      ['authored by a bot, sent by a person', 'issues.opened', { ...githubIssueOpened(), issue: { ...(githubIssueOpened().issue as object), user: { login: 'x[bot]', type: 'Bot' } } }, /bot/],
      ['a pull request', 'pull_request.opened', githubPullRequestOpened(), /no handler for github pull_request\.opened/],
      ['an issue-shaped pull request', 'issues.opened', { ...githubIssueOpened(), issue: { ...(githubIssueOpened().issue as object), pull_request: { url: 'https://x' } } }, /pull request/],
      ['edited, not opened', 'issues.edited', { ...githubIssueOpened(), action: 'edited' }, /no handler/],
      ['header says opened, body does not', 'issues.opened', { ...githubIssueOpened(), action: 'edited' }, /no handler/],
      ['no event header (type is the bare action)', 'opened', githubIssueOpened(), /no handler/],
      ['without a title', 'issues.opened', githubIssueOpened({ title: '   ' }), /without number, title/],
      ['without a repository', 'issues.opened', { ...githubIssueOpened(), repository: 'x' }, /without number, title or repository/],
      ['without node id or repository id', 'issues.opened', { ...githubIssueOpened({ nodeId: null }), repository: { full_name: 'a/b' } }, /node_id/],
      ['a string issue', 'issues.opened', { action: 'opened', issue: 'x' }, /without number/],
    ];
    for (const [what, eventType, body, reason] of ignored) {
      it(`ignores an issue event ${what}`, () => {
        const plan = planRoute(orgId, 'github', eventType, body);
        expect(plan.kind, what).to.equal('ignore');
        expect(plan.kind === 'ignore' && plan.reason).to.match(reason);
      });
    }
  });

  describe('GitHub check runs and workflow runs', () => {
    it('a failed check run on troupe/<id> notes the check and its link on that session', () => {
      const body = githubCheckRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'failure', name: 'lint', htmlUrl: 'https://github.com/acme/app/runs/9' });
      expect(planRoute(orgId, 'github', 'check_run.completed', body)).to.deep.equal({
        kind: 'recordSessionActivity', sessionId, activityKind: 'ci.job_failed',
        body: 'GitHub check run lint failure in Codertocat/Hello-World: https://github.com/acme/app/runs/9',
      });
    });

    it('a timed-out workflow run on troupe/<id>/<more> names the workflow (the run name being empty)', () => {
      const body = githubWorkflowRunCompleted({ branch: `troupe/${sessionId}/retry`, conclusion: 'timed_out', name: 'CI', htmlUrl: 'https://github.com/octo-org/octo-repo/actions/runs/5' });
      expect(planRoute(orgId, 'github', 'workflow_run.completed', body)).to.deep.equal({
        kind: 'recordSessionActivity', sessionId, activityKind: 'ci.job_failed',
        body: 'GitHub workflow CI #42 timed_out in octo-org/octo-repo: https://github.com/octo-org/octo-repo/actions/runs/5',
      });
    });

    it('leaves out a link that is not https', () => {
      for (const htmlUrl of ['http://github.com/x', 'javascript:alert(1)', 'https://x y']) {
        const plan = planRoute(orgId, 'github', 'check_run.completed', githubCheckRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'failure', htmlUrl }));
        expect(plan.kind === 'recordSessionActivity' && plan.body, htmlUrl).to.equal('GitHub check run Octocoders-linter failure in Codertocat/Hello-World');
      }
    });

    const ignored: [string, string, Record<string, unknown>][] = [
      ['a passing check run', 'check_run.completed', githubCheckRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'success' })],
      ['a cancelled workflow run', 'workflow_run.completed', githubWorkflowRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'cancelled' })],
      ['a failed run on main', 'workflow_run.completed', githubWorkflowRunCompleted({ branch: 'main', conclusion: 'failure' })],
      ['a branch with a short id', 'check_run.completed', githubCheckRunCompleted({ branch: 'troupe/0123', conclusion: 'failure' })],
      ['a branch with the id not first', 'check_run.completed', githubCheckRunCompleted({ branch: `feature/troupe/${sessionId}`, conclusion: 'failure' })],
      ['a check run still running', 'check_run.created', { ...githubCheckRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'failure' }), action: 'created' }],
      ['a workflow run requested', 'workflow_run.requested', { ...githubWorkflowRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'failure' }), action: 'requested' }],
      ['a check run without a suite', 'check_run.completed', { action: 'completed', check_run: { conclusion: 'failure', check_suite: null } }],
    ];
    for (const [what, eventType, body] of ignored) {
      it(`ignores ${what}`, () => expect(planRoute(orgId, 'github', eventType, body).kind).to.equal('ignore'));
    }
  });

  describe('Vercel deployments', () => {
    it('a failed deployment of troupe/<id> notes its URL and build log on that session, whichever git provider', () => {
      for (const git of ['github', 'gitlab', 'bitbucket'] as const) {
        const { body } = vercelDeployment({ branch: `troupe/${sessionId}`, git });
        const plan = planRoute(orgId, 'vercel', 'deployment.error', body);
        const links = (body.payload as { links: { deployment: string } }).links;
        expect(plan, git).to.deep.equal({
          kind: 'recordSessionActivity', sessionId, activityKind: 'deploy.failed',
          body: `Vercel deployment of acme-web failed: https://acme-web-3kd8s2.vercel.app (build log: ${links.deployment})`,
        });
      }
    });

    it('leaves out a deployment URL that is neither a host name nor https', () => {
      const { body } = vercelDeployment({ branch: `troupe/${sessionId}`, url: 'javascript:alert(1)//x' });
      const plan = planRoute(orgId, 'vercel', 'deployment.error', body);
      expect(plan.kind === 'recordSessionActivity' && plan.body).to.match(/^Vercel deployment of acme-web failed \(build log: https:\/\/vercel\.com\//);
    });

    const ignored: [string, string, Record<string, unknown>][] = [
      ['a successful deployment', 'deployment.succeeded', vercelDeployment({ type: 'deployment.succeeded', branch: `troupe/${sessionId}` }).body],
      ['a canceled deployment', 'deployment.canceled', vercelDeployment({ type: 'deployment.canceled', branch: `troupe/${sessionId}` }).body],
      ['a failed deployment of main', 'deployment.error', vercelDeployment({ branch: 'main' }).body],
      ['a deployment without git metadata', 'deployment.error', { id: 'evt_1', type: 'deployment.error', payload: { deployment: { id: 'dpl_1', meta: {} } } }],
      ['a payload that is not an object', 'deployment.error', { id: 'evt_1', type: 'deployment.error', payload: [1] }],
    ];
    for (const [what, eventType, body] of ignored) {
      it(`ignores ${what}`, () => expect(planRoute(orgId, 'vercel', eventType, body).kind).to.equal('ignore'));
    }
  });

  it('never plans work for one provider from another provider’s event', () => {
    const cases: [WebhookProvider, string, Record<string, unknown>][] = [
      ['linear', 'issues.opened', githubIssueOpened()],
      ['circleci', 'workflow_run.completed', githubWorkflowRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'failure' })],
      ['github', 'deployment.error', vercelDeployment({ branch: `troupe/${sessionId}` }).body],
      ['vercel', 'check_run.completed', githubCheckRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'failure' })],
    ];
    for (const [provider, eventType, body] of cases) expect(planRoute(orgId, provider, eventType, body).kind, provider).to.equal('ignore');
  });
});
