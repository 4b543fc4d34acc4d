// Invariant: a project's vocabulary includes the plugin verbs daemons snapshotted (`plugin:<pluginId>.<verbId>`) and
// the tools of its palette; its digest changes when a snapshot adds a verb and not when only a verb's option
// choices change; a synthesis request naming a snapshotted verb gives a valid candidate with that plugin node, which
// applies as a proposal, and naming an unknown verb is a question; simulation resolves a plugin node as a dispatch
// on a Session whose id is its node key, so a policy can deny exactly that verb.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { authoringSnapshot } from '../../../actors/kinds/authoring/snapshot.js';
import { assertValidPlan } from '../../../actors/kinds/authoring/plan.js';
import { expectRuntimeUnchanged } from './authoring-fixtures.js';

const verb = 'plugin:com.acme.deploy.run';

const request = (steps: string[]) => ({
  kind: 'synthesis-request', schemaVersion: '1', target: 'workflow', goal: 'Ship it', outcome: 'Staging runs the new build',
  steps, approval: false, waitSeconds: 0,
});

for (const { set, skip } of engineSets) describe(`authoring: plugin verbs and palette tools in the vocabulary (${set} engines)`, function () {
  if (skip) return;
  this.timeout(120_000);
  let t: TestNode;
  let org: ProvisionedOrg;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  const post = (what: string, body: unknown) => t.inject('POST', `/api/projects/${org.projectId}/authoring/${what}`, { token: org.ownerToken, body });
  const snapshot = async (snapshots: unknown[]) => {
    const r = await t.inject('POST', '/api/daemon/options/snapshot', { token: org.ownerToken, body: { orgId: org.orgId, projectId: org.projectId, snapshots } });
    expect(r.status, r.text).to.equal(200);
  };
  const digestNow = async () => {
    const r = await post('synthesize', { synthesisRequest: request(['Build']) });
    expect(r.status, r.text).to.equal(200);
    return r.json.digests.vocabularyDigest as string;
  };

  it('changes the digest when a snapshot adds a verb, not when only its options change', async () => {
    const before = await digestNow();
    await snapshot([{ pluginId: 'com.acme.deploy', verbId: 'run', options: { env: ['staging'] } }]);
    const added = await digestNow();
    expect(added).not.to.equal(before);
    await snapshot([{ pluginId: 'com.acme.deploy', verbId: 'run', options: { env: ['staging', 'prod'] } }]);
    expect(await digestNow()).to.equal(added);

    const { vocabulary } = await authoringSnapshot(t.node.deps.db, org.orgId, org.projectId, '');
    expect(vocabulary.nodeKinds.map((k) => k.nodeKey)).to.include(verb);
    // The palette lists the verb as a tool too, by name only: no options, timestamps or liveness.
    expect(vocabulary.tools).to.deep.include({ kind: 'plugin', id: 'plugin:com.acme.deploy:run', name: 'run' });
  });

  it('synthesizes a step naming a snapshotted verb into a plugin node that validates and applies', async () => {
    await snapshot([{ pluginId: 'com.acme.deploy', verbId: 'run', options: {} }]);
    await expectRuntimeUnchanged(t, async () => {
      const a = await post('synthesize', { synthesisRequest: request(['Build the release', `${verb} to staging`]) });
      const b = await post('synthesize', { synthesisRequest: request(['Build the release', `${verb} to staging`]) });
      expect(a.status, a.text).to.equal(200);
      expect(b.text).to.equal(a.text);
      expect(a.json.status).to.equal('candidate');
      const plan = a.json.candidate.plan;
      expect(plan.nodes[1]).to.deep.equal({ id: 'step-2', nodeKey: verb, config: { prompt: 'to staging' } });
      const { vocabulary } = await authoringSnapshot(t.node.deps.db, org.orgId, org.projectId, '');
      expect(() => assertValidPlan(plan, vocabulary)).not.to.throw();
    });
    const c = await post('synthesize', { synthesisRequest: request([`${verb} to staging`]) });
    const applied = await post('apply', { target: 'workflow', plan: c.json.candidate.plan, ...c.json.digests });
    expect(applied.status, applied.text).to.equal(200);
    expect(applied.json).to.include({ applied: true, version: 1 });
  });

  it('asks instead of guessing when a step names a verb no daemon snapshotted', async () => {
    const r = await post('synthesize', { synthesisRequest: request(['plugin:com.acme.deploy.rollback now']) });
    expect(r.status, r.text).to.equal(200);
    expect(r.json.status).to.equal('question');
    expect(r.json.questions.map((q: { field: string }) => q.field)).to.deep.equal(['steps.0']);
  });

  it('simulates a plugin node as a dispatch a policy can single out', async () => {
    await snapshot([{ pluginId: 'com.acme.deploy', verbId: 'run', options: {} }, { pluginId: 'lint', verbId: 'check', options: {} }]);
    const created = await t.inject('POST', '/api/policies', {
      token: org.ownerToken,
      body: { name: 'no deploys', status: 'draft', cedarPolicy: `forbid (principal, action == Troupe::Action::"dispatch", resource == Troupe::Session::"${verb}");` },
    });
    expect(created.status, created.text).to.equal(201);
    const plan = {
      name: 'sim', description: '',
      nodes: [{ id: 'lint', nodeKey: 'plugin:lint.check', config: {} }, { id: 'deploy', nodeKey: verb, config: { options: { env: 'staging' } } }],
      edges: [{ source: 'lint', target: 'deploy' }],
    };
    await expectRuntimeUnchanged(t, async () => {
      const r = await post('simulate', { policyId: created.json.policy.id, policyVersion: 1, plan });
      expect(r.status, r.text).to.equal(200);
      expect(r.json.decision).to.equal('deny');
      expect(r.json.nodes[0]).to.include({ id: 'lint', decision: 'allow' });
      expect(r.json.nodes[1]).to.include({ id: 'deploy', decision: 'deny' });
      expect(r.json.nodes[1].reasons).to.deep.equal([`org.policy/${created.json.policy.id}/v1#0`]);
    });
  });
});
