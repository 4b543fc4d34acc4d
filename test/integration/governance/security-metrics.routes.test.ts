// Invariant: security metrics are computed from the org's own records — policy changes and incidents appear in the
// overview, the timeline is the org's audit chain (newest first, never more than 100 rows) with users named, health
// re-verifies the chain, a refused request is recorded as a denial naming the policy that determined it and shows in
// overview, timeline and posture — and nothing of another org leaks in.
import { expect } from 'chai';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { addUser, provisionOrg, type ProvisionedOrg, governanceEngineSets } from './governance-fixtures.js';

for (const { set, skip } of governanceEngineSets) describe(`governance: security metrics (${set} engines)`, function () {
  if (skip) return;
  this.timeout(30_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  const cedarPolicy = 'permit (principal is Troupe::User, action == Troupe::Action::"read", resource is Troupe::Incident) when { principal.orgId == resource.orgId };';

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    for (let i = 0; i < 3; i += 1) {
      const r = await t.inject('POST', '/api/policies', { token: org.ownerToken, body: { name: `p${i}`, cedarPolicy, regulatoryTags: ['SOC2', `T${i}`] } });
      expect(r.status, r.text).to.equal(201);
    }
  });
  after(async () => { await t?.close(); });

  const metrics = (q: string, token = org.ownerToken) => t.inject('GET', `/api/security/metrics${q}`, { token });

  it('overview counts this org\'s policy changes and policies', async () => {
    const r = await metrics('');
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.include({ metricType: 'overview', timeRange: '30d' });
    expect(r.json.metrics.policyChanges).to.equal(6); // created + version 1, three times
    expect(r.json.metrics.activePolicies).to.equal(3);
    const elsewhere = await metrics('', other.ownerToken);
    expect(elsewhere.json.metrics.policyChanges).to.equal(0);
  });

  it('timeline is the audit chain, newest first, capped by limit, with actor names', async () => {
    const r = await metrics('?metricType=timeline&timeRange=24h&limit=2');
    expect(r.status, r.text).to.equal(200);
    expect(r.json.timeline).to.have.length(2);
    expect(r.json.timeline[0].seq).to.be.greaterThan(r.json.timeline[1].seq);
    expect(r.json.actorNames[org.ownerId]).to.be.a('string').and.match(/@example\.test$/);
    expect((await metrics('?metricType=timeline&limit=101')).status).to.equal(400);
  });

  it('health verifies the chain and posture lists covered tags', async () => {
    const health = await metrics('?metricType=health&timeRange=7d');
    expect(health.json.health.auditChain.valid).to.equal(true);
    expect(health.json.health.status).to.equal('healthy');
    const posture = await metrics('?metricType=posture&timeRange=90d');
    expect(posture.json.posture.regulatoryTagsCovered).to.deep.equal(['SOC2', 'T0', 'T1', 'T2']);
    expect(posture.json.posture.incidentIo).to.deep.equal({ connected: false, secretSource: null });
  });

  it('records a refused request as a denial and counts it in overview, timeline and posture', async () => {
    const denied = await provisionOrg(t);
    const forbid = await t.inject('POST', '/api/policies', {
      token: denied.ownerToken,
      body: { name: 'no incident reads', status: 'active', cedarPolicy: 'forbid (principal is Troupe::User, action == Troupe::Action::"read", resource is Troupe::Incident) when { principal.orgRole == "member" };' },
    });
    expect(forbid.status, forbid.text).to.equal(201);
    const member = await addUser(t, denied.orgId, 'member');
    const refused = await t.inject('GET', '/api/incidents', { token: member.token });
    expect(refused.status, refused.text).to.equal(403);
    const determining = `org.policy/${forbid.json.policy.id}/v1#0`;

    // Denials are written in batches off the request path: wait for the batch, not for a fixed time.
    let overview = await metrics('', denied.ownerToken);
    await eventually(async () => {
      overview = await metrics('', denied.ownerToken);
      return overview.json.metrics.authorizationDenials === 1;
    }, 'the denial to be recorded');
    expect(overview.json.metrics.authorizationDenialsByAction).to.deep.equal({ read: 1 });
    expect(overview.json.metrics.authorizationDenialsByPrincipalKind).to.deep.equal({ user: 1 });

    const timeline = await metrics('?metricType=timeline&timeRange=24h', denied.ownerToken);
    const row = timeline.json.timeline.find((r: { source: string }) => r.source === 'denial');
    expect(row).to.deep.include({ type: 'authz.denied', actor: member.userId, subject: 'Incident', action: 'read', principalKind: 'user', determiningPolicies: [determining] });
    expect(timeline.json.actorNames[member.userId]).to.match(/@example\.test$/);

    const posture = await metrics('?metricType=posture&timeRange=24h', denied.ownerToken);
    expect(posture.json.posture.denials).to.deep.equal({ total: 1, evaluationErrors: 0, topDeterminingPolicies: [{ policy: determining, denials: 1 }] });
    // Another org's metrics never see it.
    expect((await metrics('', org.ownerToken)).json.metrics.authorizationDenials).to.equal(0);
  });

  it('refuses unknown metric types and ranges with 400', async () => {
    for (const q of ['?metricType=all', '?timeRange=1y', '?limit=-1', '?other=1']) expect((await metrics(q)).status, q).to.equal(400);
  });
});
