// Invariant: a gate takes approve|approved, reject|rejected and escalate|escalated and answers in the past tense;
// any other word is a 400 that leaves the gate pending; `reject` on a run's gate fails the run; another org's gate is
// 404 whatever the word. An API key has no user: whoami says `user: null` and names the key and its creator apart, and
// the operations for people (approval decide, web push) refuse that same key with 403.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';

interface Org { orgId: string; projectId: string; ownerId: string; ownerToken: string }

for (const { set, skip } of engineSets) describe(`approval gate decisions and the caller they need (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;

  async function provision(name: string): Promise<Org> {
    const r = await t.inject('POST', '/api/admin/orgs', { token: t.adminToken, body: { name, owner: { email: `owner-${Date.now()}@${name.toLowerCase()}.test` } } });
    expect(r.status, r.text).to.equal(201);
    return { orgId: r.json.org.id, projectId: r.json.project.id, ownerId: r.json.owner.id, ownerToken: r.json.userToken };
  }

  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provision('Acme');
    globex = await provision('Globex');
  });
  after(() => t?.close());

  const openGate = async (title: string) => {
    const r = await t.inject('POST', '/api/approval-gates', { token: acme.ownerToken, body: { projectId: acme.projectId, title } });
    expect(r.status, r.text).to.equal(201);
    return r.json.gate.id as string;
  };
  const decide = (gateId: string, decision: unknown, token = acme.ownerToken) =>
    t.inject('POST', `/api/approval-gates/${gateId}/decide`, { token, body: { decision } });
  const statusOf = async (gateId: string) =>
    ((await t.inject('GET', '/api/approval-gates', { token: acme.ownerToken })).json.gates as { id: string; status: string }[]).find((g) => g.id === gateId)?.status;

  for (const [word, pastTense] of [
    ['approve', 'approved'], ['approved', 'approved'], ['reject', 'rejected'], ['rejected', 'rejected'], ['escalate', 'escalated'], ['escalated', 'escalated'],
  ] as const) {
    it(`takes '${word}' and answers '${pastTense}'`, async () => {
      const gateId = await openGate(`decide ${word}`);
      const r = await decide(gateId, word);
      expect(r.status, r.text).to.equal(200);
      expect(r.json).to.include({ resolved: true, decision: pastTense });
      expect(r.json.gate.status).to.equal(pastTense);
      expect(await statusOf(gateId)).to.equal(pastTense);
    });
  }

  it('refuses any other decision with 400 and leaves the gate pending', async () => {
    const gateId = await openGate('undecided');
    for (const word of ['maybe', 'APPROVE', 'approving', '', 1, null]) {
      const r = await decide(gateId, word);
      expect(r.status, `${JSON.stringify(word)}: ${r.text}`).to.equal(400);
      expect(r.json.code).to.equal('VALIDATION_FAILED');
      expect(r.json.error).to.be.a('string').and.to.contain('decision');
    }
    expect(await statusOf(gateId)).to.equal('pending');
  });

  it("fails a run whose gate is decided 'reject'", async () => {
    const definitionYaml = 'schemaVersion: v2\nname: gated\ntrigger: {type: manual}\nnodes:\n  - {id: ship, kind: approval, title: "Ship it?"}\n';
    const created = await t.inject('POST', `/api/projects/${acme.projectId}/workflows`, { token: acme.ownerToken, body: { name: 'gated', definitionYaml } });
    await t.inject('PATCH', `/api/workflows/${created.json.id}`, { token: acme.ownerToken, body: { status: 'published' } });
    const runId = (await t.inject('POST', `/api/workflows/${created.json.id}/runs`, { token: acme.ownerToken, body: {} })).json.runId as string;
    let gateId: string | undefined;
    await eventually(async () => {
      gateId = ((await t.inject('GET', '/api/approval-gates?status=pending', { token: acme.ownerToken })).json.gates as { id: string; runId: string }[])
        .find((g) => g.runId === runId)?.id;
      return gateId !== undefined;
    }, 'the run opened its gate');
    const r = await decide(gateId!, 'reject');
    expect(r.status, r.text).to.equal(200);
    await eventually(async () => (await t.inject('GET', `/api/workflow-runs/${runId}`, { token: acme.ownerToken })).json.status === 'failed', 'the run failed');
    const run = (await t.inject('GET', `/api/workflow-runs/${runId}`, { token: acme.ownerToken })).json;
    expect(run.error).to.contain("approval 'ship' was rejected");
    expect(run.steps[0]).to.include({ nodeId: 'ship', status: 'failed', decision: 'rejected' });
  });

  it("does not let another org decide a gate, in any tense: 404, and the gate stays pending", async () => {
    const gateId = await openGate('not yours');
    for (const word of ['reject', 'approved', 'escalate']) expect((await decide(gateId, word, globex.ownerToken)).status).to.equal(404);
    expect(await statusOf(gateId)).to.equal('pending');
  });

  it('shows an API key as a key with its creator, not as a user, and refuses it where a user is needed', async () => {
    const issued = await t.inject('POST', `/api/org/${acme.orgId}/keys`, { token: acme.ownerToken, body: { name: 'ci pipeline', scopes: ['admin'] } });
    expect(issued.status, issued.text).to.equal(201);
    const key = issued.json.fullKey as string;

    const viaKey = await t.inject('GET', '/api/cli/whoami', { token: key });
    expect(viaKey.status, viaKey.text).to.equal(200);
    expect(viaKey.json.user).to.equal(null);
    expect(viaKey.json.apiKey).to.deep.equal({ id: issued.json.id, name: 'ci pipeline', createdBy: acme.ownerId });
    expect(viaKey.json.org.id).to.equal(acme.orgId);
    const viaUser = await t.inject('GET', '/api/cli/whoami', { token: acme.ownerToken });
    expect(viaUser.json.user.id).to.equal(acme.ownerId);
    expect(viaUser.json.apiKey).to.equal(null);

    const gateId = await openGate('people only');
    const refused = await decide(gateId, 'approve', key);
    expect(refused.status, refused.text).to.equal(403);
    expect(refused.json.code).to.equal('AUTH_HUMAN_ONLY');
    const subscribe = await t.inject('POST', '/api/notifications/web-push/subscribe', {
      token: key, body: { endpoint: 'https://push.example.test/abc', keys: { p256dh: 'BAAA', auth: 'AAAA' } },
    });
    expect(subscribe.status, subscribe.text).to.equal(403);
    expect(subscribe.json.code).to.equal('AUTH_HUMAN_ONLY');
    expect(await statusOf(gateId)).to.equal('pending');
  });
});
