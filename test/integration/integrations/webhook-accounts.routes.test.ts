// Invariant (spec 4.7, issue 32, decision 0070): a provider delivery to the bare `POST /api/webhooks/ingest/{provider}`
// (no `?org=`) goes to the org that registered the provider's own account id it comes from (GitHub's hook target or
// repository owner, Linear's organizationId, CircleCI's organization id, Vercel's team or user id), verified with that
// org's secret; one naming no registered account is 401 before any secret is opened, and counts against its source.
// Orgs sharing an account id each receive only what their own secret signed. `accountIds` is validated (400, nothing
// changed), capped at five orgs per id (409), kept when omitted; only the org's own members read or change it.
import { expect } from 'chai';
import sinon from 'sinon';
import { randomBytes, randomUUID } from 'node:crypto';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { addUser, provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { signatureHeaderFor, type WebhookProvider } from '../../../actors/services/integrations/webhooks/providers.js';
import { findWebhookEvent } from '../../../storage/integrations/webhook-events.js';
import { githubIssueOpened, vercelDeployment } from '../../support/provider-payloads.js';

const newSecret = () => randomBytes(20).toString('hex');
let sources = 0;
/** Each delivery from its own address unless told otherwise, so refusals in one test do not limit the next. */
const freshSource = () => `198.18.${Math.floor(++sources / 250)}.${sources % 250 + 1}`;

/** Bodies naming the account where Linear and CircleCI put it, each a fresh delivery. */
const linearIssue = (organizationId: string, identifier = `ENG-${randomUUID().slice(0, 6)}`) => ({
  action: 'create', type: 'Issue', organizationId, webhookTimestamp: Date.now(),
  data: { id: randomUUID(), identifier, title: 'Fix the login bug', description: 'Users cannot log in.' },
});
const circleciJob = (organizationId: string) => ({
  id: randomUUID(), type: 'job-completed', happened_at: new Date().toISOString(),
  organization: { id: organizationId, name: 'acme' }, project: { id: randomUUID(), name: 'web', slug: 'gh/acme/web' },
  job: { id: randomUUID(), name: 'test', number: 7, status: 'failed' },
});

for (const { set, skip } of engineSets) describe(`integrations: provider webhooks routed by account id (${set} engines)`, function () {
  if (skip) return;
  this.timeout(120_000);
  let t: TestNode;
  let acme: ProvisionedOrg;
  let globex: ProvisionedOrg;
  const acmeSecret = newSecret();
  const globexSecret = newSecret();

  before(async () => {
    t = await startTestNode({ engines: set, config: { rateLimitWebhookFailuresPerMinute: 3, trustProxyHops: 1 } });
    acme = await provisionOrg(t);
    globex = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  const integration = (org: ProvisionedOrg, provider: string) => `/api/org/${org.orgId}/integrations/${provider}`;
  const connect = async (org: ProvisionedOrg, provider: WebhookProvider, body: Record<string, unknown>, token = org.ownerToken) =>
    t.call('PUT', integration(org, provider), { token, body });
  /** A delivery to the spec's bare path, signed with `secret`. */
  const deliver = (provider: WebhookProvider, body: unknown, secret: string, headers: Record<string, string> = {}, source = freshSource()) => {
    const raw = typeof body === 'string' ? body : JSON.stringify(body);
    return t.call('POST', `/api/webhooks/ingest/${provider}`, {
      rawBody: raw,
      headers: {
        'content-type': 'application/json', 'x-forwarded-for': source, 'x-github-delivery': randomUUID(), 'x-github-event': 'issues',
        'linear-delivery': randomUUID(), ...signatureHeaderFor(provider, secret, raw), ...headers,
      },
    });
  };
  const receivedBy = async (org: ProvisionedOrg, eventId: string) => (await findWebhookEvent(t.node.deps.db, org.orgId, eventId)) !== undefined;

  it("routes each provider's delivery without ?org= by the account id the org registered", async () => {
    const ids = { github: '424242', linear: randomUUID(), circleci: randomUUID(), vercel: `team_${randomUUID().slice(0, 8)}` };
    for (const provider of Object.keys(ids) as (keyof typeof ids)[]) {
      const put = await connect(acme, provider, { signingSecret: acmeSecret, accountIds: [ids[provider], 'Acme-Corp'] });
      expect(put.status, put.text).to.equal(200);
      expect(put.json.accountIds).to.have.members([ids[provider], 'acme-corp']);
    }
    const team = vercelDeployment({ branch: 'main' });
    (team.body.payload as { team: { id: string } }).team.id = ids.vercel;
    const personal = vercelDeployment({ branch: 'main' });
    (personal.body.payload as { team: { id: null }; user: { id: string } }).team.id = null;
    (personal.body.payload as { user: { id: string } }).user.id = 'Acme-Corp';
    const deliveries: [string, () => ReturnType<typeof deliver>][] = [
      ['GitHub by its hook target id header', () => deliver('github', githubIssueOpened(), acmeSecret, { 'x-github-hook-installation-target-id': ids.github })],
      ["GitHub by the repository owner's login, in any case", () => deliver('github', githubIssueOpened({ repo: 'ACME-corp/web' }), acmeSecret)],
      ["Linear by the payload's organizationId", () => deliver('linear', linearIssue(ids.linear), acmeSecret)],
      ['CircleCI by organization.id', () => deliver('circleci', circleciJob(ids.circleci), acmeSecret)],
      ['Vercel by payload.team.id', () => deliver('vercel', team.body, acmeSecret)],
      ['Vercel by payload.user.id for a personal account', () => deliver('vercel', personal.body, acmeSecret)],
    ];
    for (const [name, attempt] of deliveries) {
      const r = await attempt();
      expect(r.status, `${name}: ${r.text}`).to.equal(200);
      expect(r.json.duplicate, name).to.equal(false);
      expect(await receivedBy(acme, r.json.eventId), name).to.equal(true);
    }
  });

  it('refuses a delivery whose account no org registered with 401 at once, opening no secret, and counts it against the source', async () => {
    const open = sinon.spy(t.node.deps.secrets, 'open');
    const source = freshSource();
    try {
      const unknown = await deliver('linear', linearIssue(randomUUID()), acmeSecret, {}, source);
      expect([unknown.status, unknown.json.code]).to.deep.equal([401, 'AUTH_INVALID']);
      const none = await deliver('vercel', { id: `evt_${randomUUID()}`, type: 'deployment.error', payload: {} }, acmeSecret, {}, source);
      expect(none.status, 'a delivery naming no account').to.equal(401);
      const garbage = await deliver('github', 'not json at all', acmeSecret, {}, source);
      expect(garbage.status, 'a body that names nothing').to.equal(401);
      expect(open.callCount, 'no secret opened, so no HMAC computed').to.equal(0);
    } finally {
      open.restore();
    }
    const limited = await deliver('linear', linearIssue(randomUUID()), acmeSecret, {}, source);
    expect([limited.status, limited.json.code], 'the fourth refusal from one source').to.deep.equal([429, 'RATE_LIMITED']);
  });

  it('lets two orgs claim one account id and gives each only the deliveries its own secret signed', async () => {
    const shared = randomUUID();
    expect((await connect(acme, 'linear', { signingSecret: acmeSecret, accountIds: [shared] })).status).to.equal(200);
    expect((await connect(globex, 'linear', { signingSecret: globexSecret, accountIds: [shared.toUpperCase()] })).status).to.equal(200);

    const toAcme = await deliver('linear', linearIssue(shared, 'ENG-1001'), acmeSecret);
    const toGlobex = await deliver('linear', linearIssue(shared, 'ENG-2002'), globexSecret);
    expect([toAcme.status, toGlobex.status]).to.deep.equal([200, 200]);
    expect([await receivedBy(acme, toAcme.json.eventId), await receivedBy(globex, toAcme.json.eventId)]).to.deep.equal([true, false]);
    expect([await receivedBy(globex, toGlobex.json.eventId), await receivedBy(acme, toGlobex.json.eventId)]).to.deep.equal([true, false]);
    const sessionsOf = async (org: ProvisionedOrg, issue: string) =>
      (await t.call('GET', `/api/sessions?trackerIssue=${issue}`, { token: org.ownerToken })).json.sessions as unknown[];
    await eventually(async () => (await sessionsOf(globex, 'ENG-2002')).length === 1, "globex's issue dispatched in globex");
    expect(await sessionsOf(acme, 'ENG-2002'), "globex's issue is not acme's").to.deep.equal([]);
    expect(await sessionsOf(globex, 'ENG-1001'), "acme's issue is not globex's").to.deep.equal([]);

    const open = sinon.spy(t.node.deps.secrets, 'open');
    try {
      const forged = await deliver('linear', linearIssue(shared), newSecret());
      expect(forged.status, 'signed by neither').to.equal(401);
      expect(open.callCount, 'each claimant tried once, no other org').to.equal(2);
    } finally {
      open.restore();
    }
  });

  it('caps one account id at five orgs: the sixth is 409 and its integration is not stored', async () => {
    const contested = `team_${randomUUID().slice(0, 8)}`;
    const orgs = [acme, globex, ...await Promise.all([0, 1, 2, 3].map(() => provisionOrg(t)))];
    for (const org of orgs.slice(0, 5)) expect((await connect(org, 'vercel', { signingSecret: newSecret(), accountIds: [contested] })).status).to.equal(200);
    const sixth = orgs[5]!;
    const refused = await connect(sixth, 'vercel', { signingSecret: newSecret(), accountIds: ['team_free', contested] });
    expect([refused.status, refused.json.code], refused.text).to.deep.equal([409, 'CONFLICT']);
    expect(refused.text).to.not.include(acme.orgId);
    expect((await t.call('GET', integration(sixth, 'vercel'), { token: sixth.ownerToken })).status, 'nothing stored').to.equal(404);
    expect((await connect(sixth, 'vercel', { signingSecret: newSecret(), accountIds: ['team_free'] })).status, 'an unclaimed id is fine').to.equal(200);
  });

  it('keeps the account ids when a PUT omits them and drops them on []', async () => {
    const account = randomUUID();
    expect((await connect(globex, 'circleci', { signingSecret: globexSecret, accountIds: [account] })).status).to.equal(200);
    const rotated = newSecret();
    const rotation = await connect(globex, 'circleci', { signingSecret: rotated });
    expect(rotation.json.accountIds).to.deep.equal([account]);
    expect((await deliver('circleci', circleciJob(account), rotated)).status, 'routed, checked with the new secret').to.equal(200);
    expect((await connect(globex, 'circleci', { signingSecret: rotated, accountIds: [] })).json.accountIds).to.deep.equal([]);
    expect((await deliver('circleci', circleciJob(account), rotated)).status, 'no longer routed').to.equal(401);
  });

  it('refuses bad accountIds with 400 and changes nothing', async () => {
    const account = randomUUID();
    expect((await connect(acme, 'circleci', { signingSecret: acmeSecret, accountIds: [account] })).status).to.equal(200);
    const before = (await t.call('GET', integration(acme, 'circleci'), { token: acme.ownerToken })).json;
    const bad: unknown[] = ['one-id', [''], ['has space'], ['tab\there'], ['x'.repeat(201)], ['dup', 'dup'], [1], [null], [{}],
      Array.from({ length: 11 }, (_, i) => `id-${i}`), ['caf\u00e9']];
    for (const accountIds of bad) {
      const r = await connect(acme, 'circleci', { signingSecret: newSecret(), accountIds });
      expect([r.status, r.json.code], JSON.stringify(accountIds).slice(0, 60)).to.deep.equal([400, 'VALIDATION_FAILED']);
    }
    expect((await t.call('GET', integration(acme, 'circleci'), { token: acme.ownerToken })).json).to.deep.equal(before);
    expect((await deliver('circleci', circleciJob(account), acmeSecret)).status, 'the old secret still verifies').to.equal(200);
  });

  it("shows an org's integration to its own members only, and lets only its admins change it", async () => {
    const account = randomUUID();
    expect((await connect(acme, 'github', { signingSecret: acmeSecret, accountIds: [account] })).status).to.equal(200);
    const read = await t.call('GET', integration(acme, 'github'), { token: (await addUser(t, acme.orgId, 'viewer')).token });
    expect(read.status, read.text).to.equal(200);
    expect(read.json).to.include({ orgId: acme.orgId, provider: 'github', connected: true, webhookUrl: `/api/webhooks/ingest/github?org=${acme.orgId}` });
    expect(read.json.accountIds).to.deep.equal([account]);
    expect(read.text).to.not.include(acmeSecret);

    const theirs = await t.call('GET', integration(acme, 'github'), { token: globex.ownerToken });
    expect([theirs.status, theirs.text.includes(account)]).to.deep.equal([403, false]);
    const change = await connect(acme, 'github', { signingSecret: globexSecret, accountIds: ['stolen'] }, globex.ownerToken);
    expect(change.status).to.equal(403);
    const member = await connect(acme, 'github', { signingSecret: globexSecret, accountIds: ['stolen'] }, (await addUser(t, acme.orgId, 'member')).token);
    expect(member.status).to.equal(403);
    expect((await t.call('GET', integration(acme, 'github'), { token: acme.ownerToken })).json.accountIds).to.deep.equal([account]);
    expect((await t.call('GET', integration(globex, 'github'), { token: globex.ownerToken })).status, 'not connected').to.equal(404);
    expect((await t.call('GET', integration(acme, 'gitlab'), { token: acme.ownerToken })).status, 'no such provider').to.equal(404);
  });
});
