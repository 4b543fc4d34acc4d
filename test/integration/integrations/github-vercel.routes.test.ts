// Invariant: verified GitHub and Vercel deliveries do real work, through the real HTTP route with the providers' own
// signatures. A GitHub issue opened by a person starts one pending session in the org whose secret signed it —
// visible through that org's sessions API and nowhere else — however often GitHub re-sends the delivery; one
// opened by a bot, or a pull request, starts nothing. A failed GitHub workflow run or check run, or a failed Vercel
// deployment, on a `troupe/<sessionId>` branch appears once in that session's detail; a branch naming another
// org's session touches nothing there, and passing runs attach nothing.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { deliverySettled, dispatchSession, sessionActivities } from './delivery-fixtures.js';
import { provision, type Org } from '../agents/fixtures.js';
import { findWebhookEvent } from '../../../storage/integrations/webhook-events.js';
import { sessionKeyOf } from '../../support/session-keys.js';
import {
  githubCheckRunCompleted, githubIssueOpened, githubPullRequestOpened, githubWorkflowRunCompleted, vercelDeployment,
} from '../../support/provider-payloads.js';

/** Vercel's scheme, computed here from its documentation: `x-vercel-signature: <hex HMAC-SHA1(secret, body)>`. */
const vercelSignature = (secret: string, body: string) => createHmac('sha1', secret).update(body).digest('hex');

for (const { set, skip } of engineSets) describe(`integrations: GitHub and Vercel deliveries do work (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: Org;
  let other: Org;
  const githubSecret = randomBytes(20).toString('hex');
  const otherGithubSecret = randomBytes(20).toString('hex');
  const vercelSecret = randomBytes(20).toString('hex');

  /** One GitHub delivery: its body, event and delivery id are fixed, so sending it again is GitHub re-sending it. */
  const githubDelivery = (event: string, payload: Record<string, unknown>) => ({ event, body: JSON.stringify(payload), id: randomUUID() });
  const deliverGithub = async (d: { event: string; body: string; id: string }, secret = githubSecret, to = org) =>
    t.inject('POST', `/api/webhooks/ingest/github?org=${to.orgId}`, {
      rawBody: d.body,
      headers: {
        'content-type': 'application/json', 'x-github-event': d.event, 'x-github-delivery': d.id,
        'x-hub-signature-256': await octokitSign(secret, d.body),
      },
    });
  const deliverVercel = (body: string) => t.inject('POST', `/api/webhooks/ingest/vercel?org=${org.orgId}`, {
    rawBody: body, headers: { 'content-type': 'application/json', 'x-vercel-signature': vercelSignature(vercelSecret, body) },
  });

  const sessionsOf = async (o: Org, trackerIssue: string): Promise<{ id: string; status: string; orgId: string }[]> => {
    const r = await t.inject('GET', `/api/sessions?trackerIssue=${encodeURIComponent(trackerIssue)}`, { token: o.apiKey });
    expect(r.status, r.text).to.equal(200);
    return r.json.sessions;
  };

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provision(t);
    other = await provision(t);
    for (const [o, provider, signingSecret] of [[org, 'github', githubSecret], [other, 'github', otherGithubSecret], [org, 'vercel', vercelSecret]] as const) {
      const put = await t.inject('PUT', `/api/org/${o.orgId}/integrations/${provider}`, { token: o.ownerToken, body: { signingSecret } });
      expect(put.status, put.text).to.equal(200);
    }
  });
  after(async () => { await t?.close(); });

  describe('GitHub issues', () => {
    it('an issue opened by a person creates one pending session, in the signing org only, however often delivered', async () => {
      const repo = `acme/app-${randomUUID().slice(0, 8)}`;
      const trackerIssue = `${repo}#12`;
      const delivery = githubDelivery('issues', githubIssueOpened({ repo, number: 12, title: 'Checkout button does nothing', body: 'Clicking it on Safari logs an error.' }));
      const first = await deliverGithub(delivery);
      expect(first.status, first.text).to.equal(200);
      expect(first.json).to.include({ ok: true, duplicate: false });
      await deliverySettled(t, org.orgId, first.json.eventId);
      const row = await findWebhookEvent(t.node.deps.db, org.orgId, first.json.eventId);
      expect(row).to.include({ status: 'routed', eventType: 'issues.opened' });

      const sessions = await sessionsOf(org, trackerIssue);
      expect(sessions.map((s) => [s.id, s.status])).to.deep.equal([[row!.sessionId, 'pending']]);
      const detail = await t.inject('GET', `/api/public/sessions/${row!.sessionId}`, { token: org.apiKey });
      expect(detail.status, detail.text).to.equal(200);
      expect(detail.json).to.include({
        status: 'pending', trackerIssue, requestedBy: 'webhook:github',
        prompt: `${trackerIssue}: Checkout button does nothing\n\nClicking it on Safari logs an error.`,
      });
      expect(detail.json.trackerSessionId).to.match(new RegExp(`^github:${org.orgId}:I_kwDO`));

      // Another org sees nothing of it.
      expect(await sessionsOf(other, trackerIssue)).to.deep.equal([]);
      expect((await t.inject('GET', `/api/public/sessions/${row!.sessionId}`, { token: other.apiKey })).status).to.equal(404);

      // GitHub re-sends the same delivery: the first answer again, and still one session.
      const again = await deliverGithub(delivery);
      expect(again.status, again.text).to.equal(200);
      expect(again.json).to.deep.equal({ ...first.json, duplicate: true });
      expect(await sessionsOf(org, trackerIssue)).to.have.length(1);

      // The other org watching the same repository gets its own session from its own delivery, not this one.
      const theirs = await deliverGithub({ ...delivery, id: randomUUID() }, otherGithubSecret, other);
      expect(theirs.status, theirs.text).to.equal(200);
      await deliverySettled(t, other.orgId, theirs.json.eventId);
      const theirSessions = await sessionsOf(other, trackerIssue);
      expect(theirSessions).to.have.length(1);
      expect(theirSessions[0]!.id).to.not.equal(row!.sessionId);
      expect(await sessionsOf(org, trackerIssue)).to.have.length(1);
    });

    it('an issue opened by a bot and a pull request start nothing', async () => {
      const repo = `acme/bots-${randomUUID().slice(0, 8)}`;
      const byBot = await deliverGithub(githubDelivery('issues', githubIssueOpened({ repo, number: 1, senderType: 'Bot' })));
      const pr = await deliverGithub(githubDelivery('pull_request', { ...githubPullRequestOpened(), repository: { full_name: repo, id: 1 } }));
      for (const r of [byBot, pr]) {
        expect(r.status, r.text).to.equal(200);
        await deliverySettled(t, org.orgId, r.json.eventId);
        expect((await findWebhookEvent(t.node.deps.db, org.orgId, r.json.eventId))?.status).to.equal('ignored');
      }
      expect((await findWebhookEvent(t.node.deps.db, org.orgId, byBot.json.eventId))?.outcome).to.deep.equal({
        detail: 'github issue opened by a bot: not dispatched, so agents cannot dispatch themselves in a loop',
      });
      expect(await sessionsOf(org, `${repo}#1`)).to.deep.equal([]);
      expect(await sessionsOf(org, `${repo}#2`)).to.deep.equal([]);
    });
  });

  describe('failures on a troupe/<sessionId> branch', () => {
    it('a failed workflow run appears once in the session detail, however often delivered; a failed check run is its own note', async () => {
      const sessionId = await dispatchSession(t, org);
      const run = githubWorkflowRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'failure', name: 'CI', htmlUrl: 'https://github.com/octo-org/octo-repo/actions/runs/77' });
      const delivery = githubDelivery('workflow_run', run);
      const first = await deliverGithub(delivery);
      expect(first.status, first.text).to.equal(200);
      await eventually(async () => (await sessionActivities(t, org, sessionId, 'ci.job_failed')).length === 1, 'workflow failure on the session');
      expect((await sessionActivities(t, org, sessionId, 'ci.job_failed'))[0]!.body)
        .to.equal('GitHub workflow CI #42 failure in octo-org/octo-repo: https://github.com/octo-org/octo-repo/actions/runs/77');
      expect(await findWebhookEvent(t.node.deps.db, org.orgId, first.json.eventId)).to.include({ status: 'routed', sessionId });

      const again = await deliverGithub(delivery);
      expect(again.json).to.deep.equal({ ...first.json, duplicate: true });
      expect(await sessionActivities(t, org, sessionId, 'ci.job_failed')).to.have.length(1);

      const check = await deliverGithub(githubDelivery('check_run', githubCheckRunCompleted({ branch: `troupe/${sessionId}/fix`, conclusion: 'timed_out', name: 'e2e' })));
      expect(check.status, check.text).to.equal(200);
      await eventually(async () => (await sessionActivities(t, org, sessionId, 'ci.job_failed')).length === 2, 'check run failure on the session');
      expect((await sessionActivities(t, org, sessionId, 'ci.job_failed'))[1]!.body).to.match(/^GitHub check run e2e timed_out in Codertocat\/Hello-World: https:\/\/github\.com\//);
    });

    it('a failed Vercel deployment notes its URL once on the session, however often delivered', async () => {
      const sessionId = await dispatchSession(t, org);
      const deployment = vercelDeployment({ branch: `troupe/${sessionId}`, git: 'gitlab', url: 'acme-web-9x8y7z.vercel.app' });
      const body = JSON.stringify(deployment.body);
      const first = await deliverVercel(body);
      expect(first.status, first.text).to.equal(200);
      await eventually(async () => (await sessionActivities(t, org, sessionId, 'deploy.failed')).length === 1, 'deployment failure on the session');
      expect((await sessionActivities(t, org, sessionId, 'deploy.failed'))[0]!.body)
        .to.match(/^Vercel deployment of acme-web failed: https:\/\/acme-web-9x8y7z\.vercel\.app \(build log: https:\/\/vercel\.com\/acme\/acme-web\/dpl_/);
      const row = await findWebhookEvent(t.node.deps.db, org.orgId, first.json.eventId);
      expect(row).to.include({ status: 'routed', sessionId, deliveryId: deployment.id, eventType: 'deployment.error' });

      const again = await deliverVercel(body);
      expect(again.json).to.deep.equal({ ...first.json, duplicate: true });
      expect(await sessionActivities(t, org, sessionId, 'deploy.failed')).to.have.length(1);
    });

    it("a branch naming another org's session attaches nothing there", async () => {
      const theirs = await dispatchSession(t, other);
      const before = await sessionActivities(t, other, theirs);
      const deliveries = [
        await deliverGithub(githubDelivery('workflow_run', githubWorkflowRunCompleted({ branch: `troupe/${theirs}`, conclusion: 'failure' }))),
        await deliverGithub(githubDelivery('check_run', githubCheckRunCompleted({ branch: `troupe/${theirs}`, conclusion: 'failure' }))),
        await deliverVercel(JSON.stringify(vercelDeployment({ branch: `troupe/${theirs}` }).body)),
      ];
      for (const r of deliveries) {
        expect(r.status, r.text).to.equal(200);
        await deliverySettled(t, org.orgId, r.json.eventId);
        const row = await findWebhookEvent(t.node.deps.db, org.orgId, r.json.eventId);
        expect(row?.status).to.equal('ignored');
        expect(row?.sessionId ?? null).to.equal(null);
      }
      expect(await sessionActivities(t, other, theirs)).to.deep.equal(before);
      expect(await t.node.deps.db('session_activities').where({ session_id: await sessionKeyOf(t.node.deps.db, other.orgId, theirs) }).whereIn('kind', ['ci.job_failed', 'deploy.failed']).count({ n: '*' }))
        .to.deep.equal([{ n: 0 }]);
    });

    it('passing runs, successful deployments and other branches attach nothing', async () => {
      const sessionId = await dispatchSession(t, org);
      const deliveries = [
        await deliverGithub(githubDelivery('workflow_run', githubWorkflowRunCompleted({ branch: `troupe/${sessionId}`, conclusion: 'success' }))),
        await deliverGithub(githubDelivery('check_run', githubCheckRunCompleted({ branch: 'main', conclusion: 'failure' }))),
        await deliverVercel(JSON.stringify(vercelDeployment({ type: 'deployment.succeeded', branch: `troupe/${sessionId}` }).body)),
      ];
      for (const r of deliveries) {
        expect(r.status, r.text).to.equal(200);
        await deliverySettled(t, org.orgId, r.json.eventId);
        expect((await findWebhookEvent(t.node.deps.db, org.orgId, r.json.eventId))?.status).to.equal('ignored');
      }
      expect((await sessionActivities(t, org, sessionId)).filter((a) => ['ci.job_failed', 'deploy.failed'].includes(a.kind))).to.deep.equal([]);
    });
  });
});
