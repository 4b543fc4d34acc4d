// Invariant: a provider delivery is accepted only when it carries that provider's own signature (GitHub
// X-Hub-Signature-256, Linear Linear-Signature + fresh webhookTimestamp, CircleCI circleci-signature v1=, Vercel
// x-vercel-signature SHA-1) made with exactly one connected org's secret; it is answered 200 at once, recorded once per
// provider delivery id (a repeat is duplicate: true and not routed again), and routed to its provider-event actor — a
// Linear issue creation dispatches a session in that org. Anything else (tampered, unsigned, stale, unknown provider,
// over 1 MiB, hostile bytes) is refused with a 4xx and changes nothing; the connect route is admin-only and org-scoped.
import { expect } from 'chai';
import sinon from 'sinon';
import { randomBytes, randomUUID } from 'node:crypto';
import { sign as octokitSign, verify as octokitVerify } from '@octokit/webhooks-methods';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { addUser, nonHumanTokens, provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { signatureHeaderFor, signedWith, type WebhookProvider } from '../../../actors/services/integrations/webhooks/providers.js';
import { findWebhookEvent } from '../../../storage/integrations/webhook-events.js';

const ingest = (provider: string, org?: string) => `/api/webhooks/ingest/${provider}${org ? `?org=${org}` : ''}`;
const newSecret = () => randomBytes(20).toString('hex');

for (const { set, skip } of engineSets) describe(`integrations: provider webhooks (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  const secrets: Record<WebhookProvider, string> = { linear: newSecret(), github: newSecret(), circleci: newSecret(), vercel: newSecret() };
  const otherSecret = newSecret();

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    for (const provider of Object.keys(secrets) as WebhookProvider[]) {
      const put = await t.inject('PUT', `/api/org/${org.orgId}/integrations/${provider}`, { token: org.ownerToken, body: { signingSecret: secrets[provider] } });
      expect(put.status, put.text).to.equal(200);
      expect(put.json).to.include({ orgId: org.orgId, provider, connected: true, projectId: null });
    }
    const put = await t.inject('PUT', `/api/org/${other.orgId}/integrations/github`, { token: other.ownerToken, body: { signingSecret: otherSecret } });
    expect(put.status, put.text).to.equal(200);
  });
  after(async () => { await t?.close(); });

  /** A delivery to the URL the connect route hands out (`?org=`), org A's unless another is named. */
  const deliver = (provider: string, body: string | Buffer, headers: Record<string, string>, orgId: string | undefined = org.orgId) =>
    t.inject('POST', ingest(provider, orgId), { rawBody: body, headers: { 'content-type': 'application/json', ...headers } });

  describe('signature schemes', () => {
    it("GitHub's documented test vector and @octokit/webhooks-methods agree with our verifier", async () => {
      // docs.github.com "Validating webhook deliveries", testing section.
      const secret = "It's a Secret to Everybody";
      const expected = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
      expect(signatureHeaderFor('github', secret, 'Hello, World!')['x-hub-signature-256']).to.equal(expected);
      expect(await octokitSign(secret, 'Hello, World!')).to.equal(expected);
      expect(signedWith('github', secret, [Buffer.from(expected.slice(7), 'hex')], Buffer.from('Hello, World!'))).to.equal(true);
      expect(signedWith('github', secret, [Buffer.from(expected.slice(7), 'hex')], Buffer.from('Hello, World?'))).to.equal(false);
    });

    it('accepts a GitHub delivery signed by @octokit/webhooks-methods, once per X-GitHub-Delivery', async () => {
      const body = JSON.stringify({ action: 'opened', issue: { number: 1 }, repository: { full_name: 'acme/app' } });
      const signature = await octokitSign(secrets.github, body);
      expect(await octokitVerify(secrets.github, body, signature)).to.equal(true);
      const delivery = randomUUID();
      const headers = { 'x-hub-signature-256': signature, 'x-github-delivery': delivery, 'x-github-event': 'issues' };
      const first = await deliver('github', body, headers);
      expect(first.status, first.text).to.equal(200);
      expect(first.json).to.include({ ok: true, duplicate: false });
      expect(first.json.correlationId).to.be.a('string').and.not.equal('');
      const again = await deliver('github', body, headers);
      expect(again.status).to.equal(200);
      expect(again.json).to.deep.equal({ ...first.json, duplicate: true });
      await eventually(async () => (await findWebhookEvent(t.node.deps.db, org.orgId, first.json.eventId))?.status === 'ignored', 'github event recorded');
      const row = await findWebhookEvent(t.node.deps.db, org.orgId, first.json.eventId);
      expect(row).to.include({ provider: 'github', deliveryId: delivery, eventType: 'issues.opened' });
      expect(await t.node.deps.db('provider_webhook_events').where({ delivery_id: delivery }).count({ n: '*' })).to.deep.equal([{ n: 1 }]);
    });

    it('checks a delivery against the secret of the org its URL names, and no other (issue 16)', async () => {
      const body = JSON.stringify({ action: 'closed' });
      const headers = { ...signatureHeaderFor('github', otherSecret, body), 'x-github-delivery': randomUUID(), 'x-github-event': 'issues' };
      const r = await deliver('github', body, headers, other.orgId);
      expect(r.status, r.text).to.equal(200);
      expect((await findWebhookEvent(t.node.deps.db, other.orgId, r.json.eventId))?.orgId).to.equal(other.orgId);
      expect(await findWebhookEvent(t.node.deps.db, org.orgId, r.json.eventId)).to.equal(undefined);
      // The same delivery id in another org is that org's own delivery, not a duplicate.
      const mine = await deliver('github', body, { ...headers, ...signatureHeaderFor('github', secrets.github, body) }, org.orgId);
      expect(mine.json).to.include({ duplicate: false });
      // Another org's valid signature sent to this org's URL is refused: only the named org's secret is tried.
      const elsewhere = await deliver('github', body, { ...headers, 'x-github-delivery': randomUUID() }, org.orgId);
      expect(elsewhere.status).to.equal(401);
      // No org in the URL and no registered account in the delivery (decision 0070): refused before any secret is
      // opened; an org not connected to the provider: 401.
      const unnamed = await deliver('github', body, { ...headers, 'x-github-delivery': randomUUID() }, '');
      expect([unnamed.status, unnamed.json.code]).to.deep.equal([401, 'AUTH_INVALID']);
      const notConnected = await deliver('vercel', body, signatureHeaderFor('vercel', secrets.vercel, body), other.orgId);
      expect(notConnected.status).to.equal(401);
    });

    it('does one secret open and one HMAC per delivery, however many orgs connect the provider (issue 16)', async () => {
      const open = sinon.spy(t.node.deps.secrets, 'open');
      try {
        const body = JSON.stringify({ action: 'opened', pad: 'x'.repeat(1000) });
        const forged = { ...signatureHeaderFor('github', newSecret(), body), 'x-github-delivery': randomUUID(), 'x-github-event': 'issues' };
        expect((await deliver('github', body, forged)).status).to.equal(401);
        expect(open.callCount, 'only the named org\'s secret is opened').to.equal(1);
      } finally {
        open.restore();
      }
    });

    it('treats a replayed signed body under a fresh delivery id as the duplicate it is (GitHub and Linear, issue 16)', async () => {
      const gh = JSON.stringify({ action: 'opened', issue: { number: randomUUID() } });
      const ghHeaders = { ...signatureHeaderFor('github', secrets.github, gh), 'x-github-event': 'issues' };
      const first = await deliver('github', gh, { ...ghHeaders, 'x-github-delivery': randomUUID() });
      const replay = await deliver('github', gh, { ...ghHeaders, 'x-github-delivery': randomUUID() });
      expect(replay.status, replay.text).to.equal(200);
      expect(replay.json).to.deep.equal({ ...first.json, duplicate: true });
      const ln = JSON.stringify({ action: 'update', type: 'Comment', data: { id: randomUUID() }, webhookTimestamp: Date.now() });
      const lnHeaders = signatureHeaderFor('linear', secrets.linear, ln);
      const lnFirst = await deliver('linear', ln, { ...lnHeaders, 'linear-delivery': randomUUID() });
      const lnReplay = await deliver('linear', ln, { ...lnHeaders, 'linear-delivery': randomUUID() });
      expect(lnReplay.json).to.deep.equal({ ...lnFirst.json, duplicate: true });
    });

    it('Linear: hex HMAC-SHA256 in Linear-Signature, Linear-Delivery, webhookTimestamp within a minute', async () => {
      const now = Date.now();
      const bodyAt = (ts: number) => JSON.stringify({ action: 'update', type: 'Comment', data: { id: randomUUID() }, webhookTimestamp: ts });
      const fresh = bodyAt(now - 30_000);
      const ok = await deliver('linear', fresh, { ...signatureHeaderFor('linear', secrets.linear, fresh), 'linear-delivery': randomUUID() });
      expect(ok.status, ok.text).to.equal(200);
      const stale = bodyAt(now - 120_000);
      const old = await deliver('linear', stale, { ...signatureHeaderFor('linear', secrets.linear, stale), 'linear-delivery': randomUUID() });
      expect(old.status).to.equal(401);
      const noTimestamp = JSON.stringify({ action: 'update', type: 'Issue' });
      expect((await deliver('linear', noTimestamp, { ...signatureHeaderFor('linear', secrets.linear, noTimestamp), 'linear-delivery': randomUUID() })).status).to.equal(401);
    });

    it('CircleCI: circleci-signature v1=<hex> (other versions ignored), delivery id from the body', async () => {
      const id = randomUUID();
      const body = JSON.stringify({ id, type: 'job-completed', happened_at: new Date().toISOString(), job: { status: 'failed' } });
      const v1 = signatureHeaderFor('circleci', secrets.circleci, body)['circleci-signature']!;
      const r = await deliver('circleci', body, { 'circleci-signature': `v2=${'ab'.repeat(32)},${v1}`, 'circleci-event-type': 'job-completed' });
      expect(r.status, r.text).to.equal(200);
      expect((await deliver('circleci', body, { 'circleci-signature': v1 })).json).to.include({ duplicate: true, eventId: r.json.eventId });
      expect((await deliver('circleci', body, { 'circleci-signature': v1.replace('v1=', 'v2=') })).status).to.equal(401);
      const noId = JSON.stringify({ type: 'job-completed' });
      expect((await deliver('circleci', noId, signatureHeaderFor('circleci', secrets.circleci, noId))).status, 'signed but without id').to.equal(400);
    });

    it('Vercel: x-vercel-signature is hex HMAC-SHA1; a SHA-256 signature does not pass', async () => {
      const body = JSON.stringify({ id: `evt_${randomUUID()}`, type: 'deployment.error', payload: {} });
      const r = await deliver('vercel', body, signatureHeaderFor('vercel', secrets.vercel, body));
      expect(r.status, r.text).to.equal(200);
      const sha256 = signatureHeaderFor('github', secrets.vercel, body)['x-hub-signature-256']!.slice(7);
      expect((await deliver('vercel', body, { 'x-vercel-signature': sha256 })).status).to.equal(401);
    });
  });

  describe('routing', () => {
    it('a Linear issue creation dispatches a session in the org, once, even when delivered twice', async () => {
      const issueId = randomUUID();
      const body = JSON.stringify({
        action: 'create', type: 'Issue', webhookTimestamp: Date.now(),
        data: { id: issueId, identifier: 'ENG-42', title: 'Fix the login bug', description: 'Users cannot log in.' },
      });
      const headers = { ...signatureHeaderFor('linear', secrets.linear, body), 'linear-delivery': randomUUID() };
      const r = await deliver('linear', body, headers);
      expect(r.status, r.text).to.equal(200);
      await eventually(async () => (await findWebhookEvent(t.node.deps.db, org.orgId, r.json.eventId))?.status === 'routed', 'linear event routed');
      const row = await findWebhookEvent(t.node.deps.db, org.orgId, r.json.eventId);
      expect(row?.sessionId).to.match(/^[0-9a-f]{16}$/);
      const sessions = await t.inject('GET', '/api/sessions?trackerIssue=ENG-42', { token: org.ownerToken });
      expect(sessions.status, sessions.text).to.equal(200);
      expect(sessions.json.sessions.map((s: { id: string }) => s.id)).to.deep.equal([row!.sessionId]);
      const detail = await t.inject('GET', `/api/public/sessions/${row!.sessionId}`, { token: org.ownerToken });
      expect(detail.status, detail.text).to.equal(200);
      expect(JSON.stringify(detail.json)).to.include('Fix the login bug');
      expect((await t.inject('GET', `/api/public/sessions/${row!.sessionId}`, { token: other.ownerToken })).status).to.equal(404);

      const again = await deliver('linear', body, headers);
      expect(again.json).to.include({ duplicate: true, eventId: r.json.eventId });
      const still = await t.inject('GET', '/api/sessions?trackerIssue=ENG-42', { token: org.ownerToken });
      expect(still.json.sessions).to.have.length(1);
    });
  });

  describe('refusals', () => {
    const githubBody = JSON.stringify({ action: 'opened' });
    const githubHeaders = () => ({ ...signatureHeaderFor('github', secrets.github, githubBody), 'x-github-delivery': randomUUID(), 'x-github-event': 'issues' });

    it('401 for a tampered body, a missing or malformed signature, or a secret nobody connected', async () => {
      const headers = githubHeaders();
      expect((await deliver('github', githubBody.replace('opened', 'closed'), headers)).status).to.equal(401);
      expect((await deliver('github', githubBody, { 'x-github-delivery': randomUUID() })).status).to.equal(401);
      for (const bad of ['sha256=', 'sha256=zz', `sha1=${'a'.repeat(40)}`, `sha256=${'a'.repeat(63)}`, 'x'.repeat(5000)]) {
        const r = await deliver('github', githubBody, { ...headers, 'x-hub-signature-256': bad });
        expect(r.status, bad.slice(0, 20)).to.equal(401);
        expect(r.json.code).to.equal('AUTH_INVALID');
      }
      expect((await deliver('github', githubBody, { ...headers, ...signatureHeaderFor('github', newSecret(), githubBody) })).status).to.equal(401);
      expect((await deliver('linear', githubBody, { 'linear-signature': signatureHeaderFor('github', secrets.github, githubBody)['x-hub-signature-256']!.slice(7), 'linear-delivery': randomUUID() })).status).to.equal(401);
    });

    it('404 for an unknown provider, 413 over 1 MiB, 400 for a bad org hint; none is a 5xx', async () => {
      expect((await deliver('gitlab', githubBody, githubHeaders())).status).to.equal(404);
      expect((await deliver('incident-io-x', githubBody, githubHeaders())).status).to.equal(404);
      const big = Buffer.alloc(1024 * 1024 + 1, 0x20);
      expect((await deliver('github', big, githubHeaders())).status).to.equal(413);
      expect((await deliver('github', githubBody, githubHeaders(), 'not-a-uuid')).status).to.equal(400);
    });

    it('validly signed but hostile bodies are 400, never 5xx', async () => {
      for (const raw of [Buffer.from([0xff, 0xfe, 0x7b]), Buffer.from('{"a":'), Buffer.from('[1,2]'), Buffer.from('null'), Buffer.from('')]) {
        const headers = { ...signatureHeaderFor('github', secrets.github, raw), 'x-github-delivery': randomUUID() };
        const r = await deliver('github', raw, headers);
        expect(r.status, raw.toString('hex')).to.equal(400);
      }
      const longId = { ...githubHeaders(), 'x-github-delivery': 'x'.repeat(500) };
      expect((await deliver('github', githubBody, longId)).status).to.equal(400);
    });

    it('the incident.io literal path still reaches the governance route', async () => {
      const r = await t.inject('POST', '/api/webhooks/ingest/incident-io', { rawBody: '{}', headers: { 'content-type': 'application/json' } });
      expect(r.status).to.equal(401);
      expect(r.json.error).to.match(/webhook signature/);
    });
  });

  describe('connecting a provider', () => {
    const path = (orgId: string, provider = 'github') => `/api/org/${orgId}/integrations/${provider}`;

    it('stores the secret sealed, never returns it, and lets a later secret replace it', async () => {
      const row = await t.node.deps.db('provider_integrations').where({ org_id: org.orgId, provider: 'github' }).first();
      expect(row.sealed_secret).to.be.a('string').and.not.include(secrets.github);
      const put = await t.inject('PUT', path(org.orgId, 'vercel'), { token: org.apiKey, body: { signingSecret: secrets.vercel, projectId: org.projectId } });
      expect(put.status, put.text).to.equal(200);
      expect(put.text).to.not.include(secrets.vercel);
      expect(put.json).to.include({ projectId: org.projectId });
    });

    it('refuses members, viewers, other orgs, runtime tokens, unknown providers and bad bodies', async () => {
      const member = await addUser(t, org.orgId, 'member');
      const viewer = await addUser(t, org.orgId, 'viewer');
      const tokens = await nonHumanTokens(t, org);
      const body = { signingSecret: newSecret() };
      expect((await t.inject('PUT', path(org.orgId), { token: member.token, body })).status).to.equal(403);
      expect((await t.inject('PUT', path(org.orgId), { token: viewer.token, body })).status).to.equal(403);
      expect((await t.inject('PUT', path(org.orgId), { token: other.ownerToken, body })).status).to.equal(403);
      expect((await t.inject('PUT', path(org.orgId), { token: tokens.runtime, body })).status).to.equal(403);
      expect((await t.inject('PUT', path(org.orgId), { body })).status).to.equal(401);
      expect((await t.inject('PUT', path(org.orgId), { token: t.adminToken, body })).status).to.equal(403);
      expect((await t.inject('PUT', path(org.orgId, 'gitlab'), { token: org.ownerToken, body })).status).to.equal(404);
      for (const bad of [{}, { signingSecret: 'short' }, { signingSecret: 'has space in it' }, { signingSecret: newSecret(), extra: 1 },
        { signingSecret: newSecret(), projectId: other.projectId }, { signingSecret: newSecret(), projectId: 'nope' }]) {
        const r = await t.inject('PUT', path(org.orgId), { token: org.ownerToken, body: bad });
        expect(r.status, JSON.stringify(bad)).to.equal(400);
      }
      // The secret did not change through any refused call.
      const b = JSON.stringify({ action: 'x' });
      expect((await deliver('github', b, { ...signatureHeaderFor('github', secrets.github, b), 'x-github-delivery': randomUUID() }, org.orgId)).status).to.equal(200);
    });
  });
});
