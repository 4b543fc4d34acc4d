// Invariant: synthesis is deterministic (the same request answers the same bytes) and every candidate is a valid
// v2 definition built only from the vocabulary; apply stores it as an isolated proposal whose versions are immutable
// (1, then 2) and refuses, with 409 naming it, each digest that no longer matches (candidate, base, vocabulary,
// policy, proposal version); simulation evaluates a canvas against exactly one policy revision joined with the
// defaults, denying on a forbid, no permit, an unknown node, an unmatched tool or an evaluation error. Only apply
// writes, and only proposal rows: runtime tables are unchanged after every helper. No input answers 5xx.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { addUser, nonHumanTokens, provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { expectRuntimeUnchanged } from './authoring-fixtures.js';
import { loadVocabulary } from '../../../actors/kinds/authoring/vocabulary.js';
import { assertValidPlan } from '../../../actors/kinds/authoring/plan.js';

const request = (extra: Record<string, unknown> = {}) => ({
  kind: 'synthesis-request', schemaVersion: '1', target: 'workflow', goal: 'Fix flaky tests', outcome: 'Flaky tests are fixed',
  steps: ['Find the flaky tests', 'Fix them', 'Open a pull request'], approval: true, approverRole: 'admin', waitSeconds: 60, ...extra,
});

for (const { set, skip } of engineSets) describe(`authoring: synthesis, proposals and simulation over HTTP (${set} engines)`, function () {
  if (skip) return;
  this.timeout(180_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  let base: string;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    base = `/api/projects/${org.projectId}/authoring`;
  });
  after(async () => { await t?.close(); });

  const post = (what: string, body: unknown, token = org.ownerToken) => t.inject('POST', `${base}/${what}`, { token, body });

  describe('synthesize', () => {
    it('answers the same bytes for the same request, a valid plan from the vocabulary, and writes nothing', async () => {
      await expectRuntimeUnchanged(t, async () => {
        const a = await post('synthesize', { synthesisRequest: request() });
        const b = await post('synthesize', { synthesisRequest: request() });
        expect(a.status, a.text).to.equal(200);
        expect(b.text).to.equal(a.text);
        expect(a.json.status).to.equal('candidate');
        const plan = a.json.candidate.plan;
        expect(plan.nodes.map((n: { id: string; nodeKey: string }) => `${n.id}:${n.nodeKey}`)).to.deep.equal(['step-1:agent', 'step-2:agent', 'approve:approval', 'wait:wait', 'step-3:agent']);
        expect(plan.nodes[2].config).to.deep.equal({ title: 'Approve before: Open a pull request', requiredRole: 'admin' });
        expect(plan.edges).to.have.length(4);
        const vocabulary = await loadVocabulary(org.orgId, org.projectId);
        expect(() => assertValidPlan(plan, vocabulary)).not.to.throw();
        for (const d of ['candidateDigest', 'baseDigest', 'vocabularyDigest', 'policyDigest']) expect(a.json.digests[d]).to.match(/^sha256:[0-9a-f]{64}$/);
      });
    });

    it('gives every combination of answers a valid candidate', async () => {
      const vocabulary = await loadVocabulary(org.orgId, org.projectId);
      for (const steps of [['one'], ['one', 'two']]) {
        for (const approval of [true, false]) {
          for (const waitSeconds of [0, 5]) {
            const r = await post('synthesize', { synthesisRequest: request({ steps, approval, waitSeconds, approverRole: approval ? 'owner' : undefined }) });
            expect(r.status, r.text).to.equal(200);
            expect(r.json.status).to.equal('candidate');
            expect(() => assertValidPlan(r.json.candidate.plan, vocabulary)).not.to.throw();
          }
        }
      }
    });

    it('asks questions when something is missing', async () => {
      const r = await post('synthesize', { synthesisRequest: { kind: 'synthesis-request', schemaVersion: '1', target: 'workflow', goal: 'x', steps: ['  '] } });
      expect(r.status, r.text).to.equal(200);
      expect(r.json.status).to.equal('question');
      expect(r.json.questions.map((q: { field: string }) => q.field)).to.deep.equal(['outcome', 'steps', 'approval']);
    });

    it('changes its baseDigest when the workflow gets a new version, and 404s another org\'s workflow', async () => {
      const w = await t.inject('POST', `/api/projects/${org.projectId}/workflows`, { token: org.ownerToken, body: { name: 'base' } });
      expect(w.status, w.text).to.equal(201);
      const first = await post('synthesize', { synthesisRequest: request({ workflowId: w.json.id }) });
      const edited = await t.inject('PATCH', `/api/workflows/${w.json.id}`, { token: org.ownerToken, body: { name: 'renamed' } });
      expect(edited.status, edited.text).to.equal(200);
      const second = await post('synthesize', { synthesisRequest: request({ workflowId: w.json.id }) });
      expect(second.json.digests.baseDigest).not.to.equal(first.json.digests.baseDigest);
      expect(second.json.digests.candidateDigest).to.equal(first.json.digests.candidateDigest);
      const foreign = await t.inject('POST', `/api/projects/${other.projectId}/workflows`, { token: other.ownerToken, body: { name: 'theirs' } });
      const r = await post('synthesize', { synthesisRequest: request({ workflowId: foreign.json.id }) });
      expect(r.status, r.text).to.equal(404);
    });
  });

  describe('apply', () => {
    async function candidate(token = org.ownerToken, extra: Record<string, unknown> = {}) {
      const r = await post('synthesize', { synthesisRequest: request(extra) }, token);
      expect(r.status, r.text).to.equal(200);
      return { target: 'workflow', ...(extra.workflowId ? { workflowId: extra.workflowId } : {}), ...r.json.digests, plan: r.json.candidate.plan };
    }

    it('stores version 1, appends version 2, and changes no runtime table', async () => {
      const body = await candidate();
      let proposalId = '';
      await expectRuntimeUnchanged(t, async () => {
        const first = await post('apply', body);
        expect(first.status, first.text).to.equal(200);
        expect(first.json).to.include({ applied: true, target: 'workflow', status: 'draft', version: 1, auditPending: false });
        proposalId = first.json.proposalId;
        const second = await post('apply', { ...body, proposalId, proposalVersion: 1 });
        expect(second.status, second.text).to.equal(200);
        expect(second.json).to.include({ proposalId, version: 2 });
        const replay = await post('apply', { ...body, proposalId, proposalVersion: 1 });
        expect(replay.status, replay.text).to.equal(409);
        expect(replay.json.details.stale).to.equal('proposalVersion');
      });
      const read = await t.inject('GET', `${base}/proposals/${proposalId}`, { token: org.ownerToken });
      expect(read.status, read.text).to.equal(200);
      expect(read.json.proposal).to.include({ id: proposalId, status: 'draft', version: 2, target: 'workflow' });
      expect(read.json.versions.map((v: { version: number }) => v.version)).to.deep.equal([2, 1]);
      expect(read.json.versions[1].plan).to.deep.equal(body.plan);
      expect(read.json.versions[1].digests.candidateDigest).to.equal(body.candidateDigest);
      const list = await t.inject('GET', `${base}/proposals`, { token: org.ownerToken });
      expect(list.json.proposals.map((p: { id: string }) => p.id)).to.include(proposalId);
      const audit = await t.node.deps.db('audit_log').where({ org_id: org.orgId, type: 'proposal.version_created', subject: proposalId }).orderBy('seq');
      expect(audit.map((a: { payload: { version: number } }) => a.payload.version)).to.deep.equal([1, 2]);
      const foreign = await t.inject('GET', `/api/projects/${other.projectId}/authoring/proposals/${proposalId}`, { token: other.ownerToken });
      expect(foreign.status).to.equal(404);
      const notMine = await t.inject('POST', `/api/projects/${other.projectId}/authoring/apply`, { token: other.ownerToken, body: { ...body, proposalId, proposalVersion: 2 } });
      expect(notMine.status, notMine.text).to.be.oneOf([404, 409]);
      const refused = await t.node.deps.db.raw('update authoring_proposal_versions set created_by = ? where proposal_id = ?', ['x', proposalId]).then(() => 'updated', () => 'refused');
      expect(refused, 'proposal versions are immutable').to.equal('refused');
    });

    it('409 naming each stale digest in turn', async () => {
      const w = await t.inject('POST', `/api/projects/${org.projectId}/workflows`, { token: org.ownerToken, body: { name: 'stale' } });
      const body = await candidate(org.ownerToken, { workflowId: w.json.id });
      const staleCandidate = await post('apply', { ...body, plan: { ...body.plan, name: 'changed after review' } });
      expect(staleCandidate.status, staleCandidate.text).to.equal(409);
      expect(staleCandidate.json.details.stale).to.equal('candidateDigest');

      const wrongVocabulary = await post('apply', { ...body, vocabularyDigest: `sha256:${'0'.repeat(64)}` });
      expect(wrongVocabulary.status).to.equal(409);
      expect(wrongVocabulary.json.details.stale).to.equal('vocabularyDigest');

      await t.inject('PATCH', `/api/workflows/${w.json.id}`, { token: org.ownerToken, body: { name: 'moved on' } });
      const staleBase = await post('apply', body);
      expect(staleBase.status, staleBase.text).to.equal(409);
      expect(staleBase.json.details.stale).to.equal('baseDigest');

      const fresh = await candidate(org.ownerToken, { workflowId: w.json.id });
      const policy = await t.inject('POST', '/api/policies', { token: org.ownerToken, body: { name: 'p', status: 'active', cedarPolicy: 'forbid (principal is Troupe::User, action == Troupe::Action::"manage-org", resource) when { principal.orgRole == \"viewer\" };' } });
      expect(policy.status, policy.text).to.equal(201);
      const stalePolicy = await post('apply', fresh);
      expect(stalePolicy.status, stalePolicy.text).to.equal(409);
      expect(stalePolicy.json.details.stale).to.equal('policyDigest');

      const unknown = await post('apply', { ...(await candidate(org.ownerToken, { workflowId: w.json.id })), proposalId: '00000000-0000-4000-8000-000000000009', proposalVersion: 1 });
      expect(unknown.status, unknown.text).to.equal(404);
    });

    it('refuses a plan outside the vocabulary or the definition schema even with matching digests', async () => {
      const body = await candidate();
      for (const plan of [
        { ...body.plan, nodes: [...body.plan.nodes, { id: 'x', nodeKey: 'plugin:evil.exec', config: {} }] },
        { ...body.plan, nodes: body.plan.nodes.map((n: any, i: number) => (i === 0 ? { ...n, config: {} } : n)) },
        { ...body.plan, edges: [...body.plan.edges, { source: 'step-1', target: 'nowhere' }] },
      ]) {
        const r = await post('synthesize', { synthesisRequest: request() });
        const digests = { ...r.json.digests };
        const { createHash } = await import('node:crypto');
        const { canonicalJson } = await import('../../../ops/kernel/canonical-json.js');
        digests.candidateDigest = `sha256:${createHash('sha256').update(canonicalJson({ target: 'workflow', plan })).digest('hex')}`;
        const applied = await post('apply', { target: 'workflow', ...digests, plan });
        expect(applied.status, applied.text).to.equal(400);
        expect(applied.json.details.field).to.match(/^plan\./);
      }
    });

    it('needs edit on proposals: a viewer is 403, an API key with write scope works', async () => {
      const viewer = await addUser(t, org.orgId, 'viewer');
      const body = await candidate(viewer.token);
      const r = await post('apply', body, viewer.token);
      expect(r.status, r.text).to.equal(403);
      const viaKey = await post('apply', body, org.apiKey);
      expect(viaKey.status, viaKey.text).to.equal(200);
    });
  });

  describe('simulate', () => {
    const plan = {
      name: 'sim', description: '',
      nodes: [
        { id: 'plan', nodeKey: 'agent', config: { prompt: 'Plan' } },
        { id: 'gate', nodeKey: 'approval', config: { title: 'Ship?' } },
        { id: 'pause', nodeKey: 'wait', config: { seconds: 5 } },
      ],
      edges: [{ source: 'plan', target: 'gate' }, { source: 'gate', target: 'pause' }],
    };
    let sim: ProvisionedOrg;
    before(async () => { sim = await provisionOrg(t); });
    const simulate = (body: unknown, token = sim.ownerToken) => t.inject('POST', `/api/projects/${sim.projectId}/authoring/simulate`, { token, body });
    const policy = async (cedarPolicy: string, status = 'draft') => {
      const r = await t.inject('POST', '/api/policies', { token: sim.ownerToken, body: { name: `p${Math.random()}`, cedarPolicy, status } });
      expect(r.status, r.text).to.equal(201);
      return r.json.policy.id as string;
    };
    const forbidAgents = 'forbid (principal, action == Troupe::Action::"dispatch", resource is Troupe::Session);';
    const harmless = 'forbid (principal is Troupe::User, action == Troupe::Action::"manage-org", resource) when { principal.orgRole == \"viewer\" };';

    it('allows, denies per node against exactly the named revision, and changes nothing', async () => {
      const id = await policy(forbidAgents);
      const updated = await t.inject('PATCH', `/api/policies/${id}`, { token: sim.ownerToken, body: { cedarPolicy: harmless } });
      expect(updated.json.policy.version).to.equal(2);
      await expectRuntimeUnchanged(t, async () => {
        const v1 = await simulate({ policyId: id, policyVersion: 1, plan });
        expect(v1.status, v1.text).to.equal(200);
        expect(v1.json.decision).to.equal('deny');
        const [agent, gate, pause] = v1.json.nodes;
        expect(agent).to.include({ id: 'plan', decision: 'deny' });
        expect(agent.reasons).to.deep.equal([`org.policy/${id}/v1#0`]);
        expect(gate.decision).to.equal('allow');
        expect(pause.decision).to.equal('allow');
        const v2 = await simulate({ policyId: id, policyVersion: 2, plan });
        expect(v2.json.decision, v2.text).to.equal('allow');
        expect(v2.json.nodes.every((n: { decision: string }) => n.decision === 'allow')).to.equal(true);
      });
    });

    it('denies an unknown node and an unmatched tool, naming why', async () => {
      const id = await policy(harmless);
      const r = await simulate({ policyId: id, policyVersion: 1, plan: { ...plan, nodes: [...plan.nodes, { id: 'x', nodeKey: 'plugin:github.merge', config: {} }, { id: 'y', nodeKey: 'agent', config: { prompt: 'p', tools: ['repo/nope'] } }] } });
      expect(r.status, r.text).to.equal(200);
      expect(r.json.decision).to.equal('deny');
      expect(r.json.nodes[3]).to.include({ id: 'x', decision: 'deny' });
      expect(r.json.nodes[3].reasons[0]).to.match(/unknown node/);
      expect(r.json.nodes[4].reasons[0]).to.match(/matches no resource/);
    });

    it('denies every node a policy fails to evaluate on, and a caller no policy permits', async () => {
      const erroring = await policy('forbid (principal is Troupe::User, action, resource is Troupe::WorkflowRun) when { 9223372036854775807 + 1 > 0 };');
      const r = await simulate({ policyId: erroring, policyVersion: 1, plan });
      expect(r.json.decision, r.text).to.equal('deny');
      expect(r.json.nodes[2].decision).to.equal('deny');
      expect(r.json.nodes[2].errors[0]).to.match(/overflow/i);
      expect(r.json.nodes[0].decision).to.equal('allow');

      const viewer = await addUser(t, sim.orgId, 'viewer');
      const harmlessId = await policy(harmless);
      const v = await simulate({ policyId: harmlessId, policyVersion: 1, plan }, viewer.token);
      expect(v.status, v.text).to.equal(200);
      expect(v.json.decision).to.equal('deny');
      expect(v.json.nodes[0].reasons[0]).to.match(/no policy permits dispatch/);
    });

    it('404 for another org\'s policy or an absent version; 413 past the node cap', async () => {
      const id = await policy(harmless);
      const foreign = await t.inject('POST', '/api/policies', { token: other.ownerToken, body: { name: 'theirs', cedarPolicy: harmless } });
      expect((await simulate({ policyId: foreign.json.policy.id, policyVersion: 1, plan })).status).to.equal(404);
      expect((await simulate({ policyId: id, policyVersion: 7, plan })).status).to.equal(404);
      const many = Array.from({ length: 201 }, (_, i) => ({ id: `n${i}`, nodeKey: 'wait', config: { seconds: 1 } }));
      expect((await simulate({ policyId: id, policyVersion: 1, plan: { ...plan, nodes: many, edges: [] } })).status).to.equal(413);
      const tokens = await nonHumanTokens(t, sim);
      expect((await simulate({ policyId: id, policyVersion: 1, plan }, tokens.runtime)).status).to.equal(403);
    });
  });

  it('answers hostile bodies with 4xx, never 5xx', async () => {
    const deep = JSON.parse(`${'{"a":'.repeat(200)}1${'}'.repeat(200)}`);
    const bodies: unknown[] = [
      null, [], 'x', 1, {}, deep, { synthesisRequest: deep }, { synthesisRequest: request({ steps: Array(21).fill('x') }) },
      { synthesisRequest: request({ kind: 'other' }) },
      { target: 'workflow', plan: deep }, { policyId: 'x', policyVersion: 1, plan: {} },
      { policyId: '00000000-0000-4000-8000-000000000000', policyVersion: -1, plan: { name: 'x', description: '', nodes: [], edges: [] } },
      { policyId: '00000000-0000-4000-8000-000000000000', policyVersion: 1, plan: { name: 'x', description: '', nodes: [{ id: 'a', nodeKey: 'agent', config: deep }], edges: [] } },
      { action: 'answer', state: deep, answer: deep, conversation: deep },
    ];
    for (const what of ['conversation', 'synthesize', 'apply', 'simulate']) {
      for (const body of bodies) {
        const r = await post(what, body);
        expect(r.status, `${what} ${JSON.stringify(body).slice(0, 80)}: ${r.text}`).to.be.within(400, 499);
      }
      const raw = await t.inject('POST', `${base}/${what}`, { token: org.ownerToken, rawBody: '{"a":', headers: { 'content-type': 'application/json' } });
      expect(raw.status).to.equal(400);
    }
  });
});
