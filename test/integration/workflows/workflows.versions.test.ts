// Invariant: every saved change to a workflow is a new, immutable, gap-free version (even under parallel PATCHes),
// audited in the org's hash chain; publish needs its own authority and a valid definition; diff and rollback work
// on the stored snapshots; another org, a wrong credential kind and a viewer are refused on every route.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { publicSessionId, sessionKey } from '../../../actors/kinds/session/index.js';

const v2 = `schemaVersion: v2
name: triage
trigger: {type: manual}
nodes:
  - {id: plan, kind: agent, prompt: "Plan the fix"}
  - {id: gate, kind: approval, title: "Ship it?"}
  - {id: ship, kind: agent, prompt: "Ship it"}
edges:
  - {source: plan, target: gate}
  - {source: gate, target: ship}
`;
const v11 = `schemaVersion: v1.1
name: triage
trigger: {type: manual}
steps:
  - {id: plan, kind: agent, prompt: "Plan the fix"}
  - {id: gate, kind: approval, title: "Ship it?"}
`;

for (const { set, skip } of engineSets) describe(`workflows: versions, publish, diff, rollback, audit (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let owner: string; let member: string; let viewer: string; let apiKey: string; let projectId: string; let orgId: string;
  let other: string; let otherProject: string;

  before(async () => {
    t = await startTestNode({ engines: set });
    const org = await t.inject('POST', '/api/admin/orgs', { token: t.adminToken, body: { name: 'Acme', owner: { email: 'o@acme.test' } } });
    expect(org.status).to.equal(201);
    owner = org.json.userToken; apiKey = org.json.apiKey.fullKey; projectId = org.json.project.id; orgId = org.json.org.id;
    const m = await t.inject('POST', `/api/admin/orgs/${orgId}/users`, { token: t.adminToken, body: { email: 'm@acme.test', role: 'member' } });
    member = m.json.userToken;
    const v = await t.inject('POST', `/api/admin/orgs/${orgId}/users`, { token: t.adminToken, body: { email: 'v@acme.test', role: 'viewer' } });
    viewer = v.json.userToken;
    const o2 = await t.inject('POST', '/api/admin/orgs', { token: t.adminToken, body: { name: 'Other', owner: { email: 'o@other.test' } } });
    other = o2.json.userToken; otherProject = o2.json.project.id;
  });
  after(() => t.close());

  const create = async (token = owner, body: Record<string, unknown> = { name: 'triage', definitionYaml: v2, nodes: [{ id: 'plan' }], edges: [] }) =>
    t.inject('POST', `/api/projects/${projectId}/workflows`, { token, body });

  it('creates version 1 as a draft with every snapshot field, and audits it', async () => {
    const res = await create();
    expect(res.status).to.equal(201);
    expect(res.json).to.include({ status: 'draft', version: 1, definitionVersion: 'v2', publishedVersion: null });
    const versions = await t.inject('GET', `/api/workflows/${res.json.id}/versions`, { token: owner });
    expect(versions.json).to.have.length(1);
    expect(versions.json[0].schemaHash).to.match(/^[0-9a-f]{64}$/);
    const audit = await t.inject('GET', '/api/audit?limit=5', { token: owner });
    const entry = audit.json.entries.find((e: any) => e.subject === res.json.id);
    expect(entry).to.deep.include({ type: 'workflow.version_created' });
    expect(entry.payload).to.include({ workflowId: res.json.id, version: 1 });
  });

  it('accepts the v1.1 example and refuses an invalid definition with the path of the first error, changing nothing', async () => {
    const w = (await create(owner, { name: 'old', definitionYaml: v11 })).json;
    expect(w.definitionVersion).to.equal('v1.1');
    const bad = await t.inject('PATCH', `/api/workflows/${w.id}`, {
      token: owner, body: { status: 'published', definitionYaml: 'schemaVersion: v2\nname: x\ntrigger: {type: manual}\nnodes:\n  - {id: a, kind: agent}\n' },
    });
    expect(bad.status).to.equal(400);
    expect(bad.json.error).to.contain('definitionYaml.nodes.0.prompt');
    const after = await t.inject('GET', `/api/workflows/${w.id}`, { token: owner });
    expect(after.json).to.include({ version: 1, status: 'draft' });
  });

  it('numbers 20 parallel PATCHes 2..21 without gaps or duplicates', async () => {
    const w = (await create()).json;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      t.inject('PATCH', `/api/workflows/${w.id}`, { token: member, body: { viewport: { x: i, y: 0, zoom: 1 }, changeReason: `edit ${i}` } })));
    expect(results.map((r) => r.status)).to.deep.equal(Array(20).fill(200));
    expect(results.map((r) => r.json.version).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 20 }, (_, i) => i + 2));
    const versions = (await t.inject('GET', `/api/workflows/${w.id}/versions`, { token: member })).json;
    expect(versions.map((v: any) => v.version)).to.deep.equal(Array.from({ length: 21 }, (_, i) => 21 - i));
  });

  it('lets a member edit but not publish; an owner publishes; editing a published workflow needs publish too', async () => {
    const w = (await create(member)).json;
    const denied = await t.inject('PATCH', `/api/workflows/${w.id}`, { token: member, body: { status: 'published' } });
    expect(denied.status).to.equal(403);
    const published = await t.inject('PATCH', `/api/workflows/${w.id}`, { token: owner, body: { status: 'published' } });
    expect(published.json).to.include({ status: 'published', version: 2, publishedVersion: 2 });
    const liveEdit = await t.inject('PATCH', `/api/workflows/${w.id}`, { token: member, body: { name: 'renamed' } });
    expect(liveEdit.status).to.equal(403);
    expect((await t.inject('GET', `/api/workflows/${w.id}`, { token: member })).json.version).to.equal(2);
  });

  it('needs publish to take a workflow out of published: members and write keys cannot unpublish (issue 16)', async () => {
    const w = (await create(owner)).json;
    await t.inject('PATCH', `/api/workflows/${w.id}`, { token: owner, body: { status: 'published' } });
    const writeKey = (await t.inject('POST', `/api/org/${orgId}/keys`, { token: owner, body: { name: 'write', scopes: ['write'] } })).json.fullKey;
    for (const [who, token] of [['member', member], ['write-scope key', writeKey]] as const) {
      for (const status of ['archived', 'draft']) {
        const res = await t.inject('PATCH', `/api/workflows/${w.id}`, { token, body: { status } });
        expect(res.status, `${who} → ${status}: ${res.text}`).to.equal(403);
        expect(res.json.code).to.equal('AUTHZ_DENIED');
      }
    }
    const still = (await t.inject('GET', `/api/workflows/${w.id}`, { token: owner })).json;
    expect(still).to.include({ status: 'published', version: 2 });
    const archived = await t.inject('PATCH', `/api/workflows/${w.id}`, { token: owner, body: { status: 'archived' } });
    expect(archived.json).to.include({ status: 'archived', version: 3 });
    const revived = await t.inject('PATCH', `/api/workflows/${w.id}`, { token: member, body: { status: 'draft' } });
    expect(revived.json, 'an archived workflow goes back to draft as an edit').to.include({ status: 'draft', version: 4 });
  });

  it('diffs two versions by node id and content, and needs compare', async () => {
    const w = (await create(owner, { name: 'd', definitionYaml: v2, nodes: [{ id: 'a', x: 1 }, { id: 'b' }], edges: [{ source: 'a', target: 'b' }] })).json;
    await t.inject('PATCH', `/api/workflows/${w.id}`, {
      token: owner, body: { nodes: [{ id: 'a', x: 2 }, { id: 'c' }], edges: [{ source: 'a', target: 'c' }], definitionYaml: v2.replace('Ship it"', 'Ship it now"') },
    });
    const diff = await t.inject('GET', `/api/workflows/${w.id}/versions/2/diff?compare=1`, { token: owner });
    expect(diff.json).to.deep.equal({
      fromVersion: 1, toVersion: 2, nodesAdded: ['c'], nodesRemoved: ['b'], nodesModified: ['a'], edgesAdded: 1, edgesRemoved: 1, yamlChanged: true,
    });
    expect((await t.inject('GET', `/api/workflows/${w.id}/versions/2/diff`, { token: owner })).status).to.equal(400);
    expect((await t.inject('GET', `/api/workflows/${w.id}/versions/9/diff?compare=1`, { token: owner })).status).to.equal(404);
  });

  it('rolls back by creating a new snapshot of the old content; unknown versions are 404', async () => {
    const w = (await create(owner, { name: 'r', definitionYaml: v2, nodes: [{ id: 'first' }] })).json;
    await t.inject('PATCH', `/api/workflows/${w.id}`, { token: owner, body: { nodes: [{ id: 'second' }], definitionYaml: v11 } });
    const rolled = await t.inject('POST', `/api/workflows/${w.id}/versions/1/rollback`, { token: owner });
    expect(rolled.status).to.equal(200);
    expect(rolled.json).to.include({ version: 3, definitionVersion: 'v2' });
    expect(rolled.json.nodes).to.deep.equal([{ id: 'first' }]);
    const versions = (await t.inject('GET', `/api/workflows/${w.id}/versions`, { token: owner })).json;
    expect(versions.map((v: any) => v.version)).to.deep.equal([3, 2, 1]);
    expect((await t.inject('POST', `/api/workflows/${w.id}/versions/7/rollback`, { token: owner })).status).to.equal(404);
  });

  it('refuses another org (404), a viewer edit (403), and hides workflows from other orgs in lists', async () => {
    const w = (await create()).json;
    expect((await t.inject('GET', `/api/workflows/${w.id}`, { token: other })).status).to.equal(404);
    expect((await t.inject('PATCH', `/api/workflows/${w.id}`, { token: other, body: { name: 'x' } })).status).to.equal(404);
    expect((await t.inject('GET', `/api/workflows/${w.id}/versions`, { token: other })).status).to.equal(404);
    expect((await t.inject('POST', `/api/workflows/${w.id}/versions/1/rollback`, { token: other })).status).to.equal(404);
    expect((await t.inject('POST', `/api/workflows/${w.id}/runs`, { token: other, body: {} })).status).to.equal(404);
    expect((await t.inject('POST', `/api/projects/${otherProject}/workflows`, { token: owner, body: { name: 'x' } })).status).to.equal(404);
    expect((await t.inject('PATCH', `/api/workflows/${w.id}`, { token: viewer, body: { name: 'x' } })).status).to.equal(403);
    expect((await t.inject('GET', '/api/workflows', { token: other })).json.workflows).to.deep.equal([]);
    const mine = (await t.inject('GET', `/api/workflows?projectId=${projectId}`, { token: apiKey })).json.workflows;
    expect(mine.map((x: any) => x.id)).to.include(w.id);
    expect((await t.inject('GET', '/api/workflows')).status).to.equal(401);
    expect((await t.inject('GET', '/api/workflows', { token: t.adminToken })).status).to.equal(403);
  });

  it('verifies the audit chain, and finds a tampered row', async () => {
    const ok = await t.inject('GET', '/api/audit/verify', { token: owner });
    expect(ok.json.valid).to.equal(true);
    expect(ok.json.checked).to.be.greaterThan(20);
    const db = t.node.deps.db;
    await db.raw('alter table audit_log disable trigger user');
    await db('audit_log').where({ org_id: orgId, seq: 3 }).update({ actor: 'someone-else' });
    await db.raw('alter table audit_log enable trigger user');
    const broken = await t.inject('GET', '/api/audit/verify', { token: owner });
    expect(broken.json).to.include({ valid: false, firstBrokenSeq: 3 });
    expect((await t.inject('GET', '/api/audit/verify', { token: other })).json.valid).to.equal(true);
  });

  it('dispatches a session for an agent step and waits for it', async () => {
    const w = (await create()).json;
    await t.inject('PATCH', `/api/workflows/${w.id}`, { token: owner, body: { status: 'published' } });
    const started = await t.inject('POST', `/api/workflows/${w.id}/runs`, { token: owner, body: {} });
    expect(started.status).to.equal(201);
    const run = (await t.inject('GET', `/api/workflow-runs/${started.json.runId}`, { token: owner })).json;
    expect(run).to.include({ status: 'running', workflowId: w.id, version: 2, error: null });
    expect(run.steps[0]).to.include({ nodeId: 'plan', kind: 'agent', status: 'running' });
    expect(run.steps[0].sessionId).to.match(/^[0-9a-f]{16}$/);
    const trackerSessionId = `workflow-run:${started.json.runId}:plan:1`;
    expect(run.steps[0].sessionId, 'shown by public id').to.equal(publicSessionId(trackerSessionId));
    const session = await t.node.deps.ask<any>(`session/${sessionKey(orgId, trackerSessionId)}`, { type: 'session.dispatch', orgId, projectId,
      trackerSessionId, prompt: 'Plan the fix', agentCardId: null, trackerIssue: null,
      workType: null, provider: null, requestedBy: `workflow-run:${started.json.runId}` }).catch((err: Error) => err);
    expect(session).not.to.be.instanceOf(Error);
  });

  it('keeps version snapshots immutable in storage', async () => {
    const w = (await create()).json;
    let failed = false;
    try {
      await t.node.deps.db('workflow_versions').where({ workflow_id: w.id }).update({ change_reason: 'rewritten' });
    } catch { failed = true; }
    expect(failed).to.equal(true);
  });
});
