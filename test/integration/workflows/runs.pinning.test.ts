// Invariant: a run executes the version that was published when it started. Runs suspended at an approval and in
// the middle of a loop keep their version across a publish and a node restart, resume from their snapshots and
// finish on it, while new runs use the new version. Gates are decided once, by humans, in their own role.
import { expect } from 'chai';
import { loadConfig } from '../../../ops/config.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { generateAdminToken, generateMasterKey } from '../../../ops/secrets.js';
import { startNode, type TroupeNode } from '../../../ops/node.js';
import { nodeInjector } from '../../support/node.js';
import { withPostgresSchema, type TestDb } from '../../support/db.js';
import { engines } from '../../support/engines.js';
import { eventually } from '../../support/transport.js';

const loopV1 = `schemaVersion: v2
name: review-loop
trigger: {type: manual}
nodes:
  - {id: loop, kind: loop, maxIterations: 2}
  - {id: check, kind: approval, title: "Looks good?"}
  - {id: fin, kind: wait, seconds: 0}
edges:
  - {source: loop, target: check, when: true}
  - {source: check, target: loop}
  - {source: loop, target: fin, when: false}
`;
const singleV2 = `schemaVersion: v1.1
name: review-once
trigger: {type: manual}
steps:
  - {id: other, kind: approval, title: "Once?"}
`;

describe('workflow runs: pinning across publish and restart; approval gates', function () {
  this.timeout(90_000);
  let db: TestDb;
  let node: TroupeNode;
  const adminToken = generateAdminToken();
  const masterKey = generateMasterKey();
  let owner: string; let member: string; let apiKey: string; let other: string; let orgId: string; let projectId: string;

  const boot = async () => startNode(loadConfig({ DATABASE_URL: engines.postgres }, {
    port: 0, host: '127.0.0.1', nodeId: 'pin-test', masterKey, adminToken, logLevel: 'silent', shardCount: 4,
  }), { log: silentLogger(), searchPath: db.schema });
  const api = (method: string, path: string, init: { token?: string; body?: unknown } = {}) => nodeInjector(node)(method, path, init);
  const run = async (runId: string) => (await api('GET', `/api/workflow-runs/${runId}`, { token: owner })).json;
  const pendingGateOf = async (runId: string): Promise<string> => {
    let id: string | undefined;
    await eventually(async () => {
      const gates = (await api('GET', '/api/approval-gates?status=pending', { token: owner })).json.gates as any[];
      id = gates.find((g) => g.runId === runId)?.id;
      return id !== undefined;
    }, `a pending gate for run ${runId}`);
    return id as string;
  };
  const decide = (gateId: string, decision = 'approved', token = owner, actorRole?: string) =>
    api('POST', `/api/approval-gates/${gateId}/decide`, { token, body: { decision, ...(actorRole ? { actorRole } : {}) } });

  before(async () => {
    db = await withPostgresSchema('wf_pinning');
    node = await boot();
    const org = await api('POST', '/api/admin/orgs', { token: adminToken, body: { name: 'Pin', owner: { email: 'o@pin.test' } } });
    owner = org.json.userToken; apiKey = org.json.apiKey.fullKey; orgId = org.json.org.id; projectId = org.json.project.id;
    member = (await api('POST', `/api/admin/orgs/${orgId}/users`, { token: adminToken, body: { email: 'm@pin.test', role: 'member' } })).json.userToken;
    other = (await api('POST', '/api/admin/orgs', { token: adminToken, body: { name: 'Else', owner: { email: 'o@else.test' } } })).json.userToken;
  });
  after(async () => { await node?.close(); await db?.drop(); });

  it('finishes suspended and mid-loop runs on v1 after a publish and a restart; new runs use the new version', async () => {
    const w = (await api('POST', `/api/projects/${projectId}/workflows`, { token: owner, body: { name: 'loop', definitionYaml: loopV1 } })).json;
    expect((await api('POST', `/api/workflows/${w.id}/runs`, { token: owner, body: {} })).status).to.equal(409);
    const published = (await api('PATCH', `/api/workflows/${w.id}`, { token: owner, body: { status: 'published' } })).json;
    expect(published.publishedVersion).to.equal(2);

    const a = await api('POST', `/api/workflows/${w.id}/runs`, { token: member, body: {} });
    expect(a.status).to.equal(201);
    expect(a.json.version).to.equal(2);
    const b = (await api('POST', `/api/workflows/${w.id}/runs`, { token: owner, body: {} })).json;
    expect((await decide(await pendingGateOf(b.runId))).status).to.equal(200);
    await eventually(async () => (await run(b.runId)).steps.filter((s: any) => s.nodeId === 'loop').length === 2, 'run b in its second iteration');
    expect((await run(a.json.runId)).status).to.equal('suspended');

    const v3 = await api('PATCH', `/api/workflows/${w.id}`, { token: owner, body: { definitionYaml: singleV2, changeReason: 'simplify' } });
    expect(v3.json).to.include({ version: 3, publishedVersion: 3, status: 'published' });

    await node.close();
    node = await boot();

    const c = (await api('POST', `/api/workflows/${w.id}/runs`, { token: owner, body: {} })).json;
    expect(c.version).to.equal(3);
    await decide(await pendingGateOf(c.runId));
    await eventually(async () => (await run(c.runId)).status === 'completed', 'run c completed');
    expect((await run(c.runId)).steps.map((s: any) => s.nodeId)).to.deep.equal(['other']);

    // Run a: two iterations of v1's loop, then its exit.
    await decide(await pendingGateOf(a.json.runId));
    await decide(await pendingGateOf(a.json.runId));
    await eventually(async () => (await run(a.json.runId)).status === 'completed', 'run a completed');
    const finishedA = await run(a.json.runId);
    expect(finishedA.version).to.equal(2);
    expect(finishedA.steps.map((s: any) => s.nodeId)).to.deep.equal(['loop', 'check', 'loop', 'check', 'loop', 'fin']);

    await decide(await pendingGateOf(b.runId));
    await eventually(async () => (await run(b.runId)).status === 'completed', 'run b completed');
    expect((await run(b.runId)).version).to.equal(2);
  });

  it('lets exactly one of several parallel decisions through; later ones are 409', async () => {
    const gate = (await api('POST', '/api/approval-gates', { token: owner, body: { projectId, title: 'Deploy?', issue: 'ENG-1' } })).json.gate;
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => decide(gate.id, i % 2 ? 'rejected' : 'approved')));
    expect(results.filter((r) => r.status === 200)).to.have.length(1);
    expect(results.filter((r) => r.status === 409)).to.have.length(5);
    const listed = (await api('GET', '/api/approval-gates?issue=ENG-1', { token: owner })).json.gates;
    expect(listed).to.have.length(1);
    expect(listed[0].decidedBy.role).to.equal('owner');
  });

  it('refuses API keys, a claimed role that is not the caller\'s, and other orgs; lists oldest first', async () => {
    const first = (await api('POST', '/api/approval-gates', { token: owner, body: { projectId, title: 'One', issue: 'ENG-2' } })).json.gate;
    const second = (await api('POST', '/api/approval-gates', { token: apiKey, body: { projectId, title: 'Two', issue: 'ENG-2' } })).json.gate;
    expect((await decide(first.id, 'approved', apiKey)).status).to.equal(403);
    expect((await decide(first.id, 'approved', member, 'admin')).status).to.equal(403);
    expect((await decide(first.id, 'approved', other)).status).to.equal(404);
    expect((await api('GET', '/api/approval-gates?issue=ENG-2', { token: other })).json.gates).to.deep.equal([]);
    expect((await api('GET', '/api/approval-gates?issue=ENG-2', { token: owner })).json.gates.map((g: any) => g.id)).to.deep.equal([first.id, second.id]);
    expect((await decide(first.id, 'approved', member, 'member')).status).to.equal(200);
  });

  it('fails a run whose approval is rejected, and walks a timed wait', async () => {
    const yaml = `schemaVersion: v2\nname: w\ntrigger: {type: manual}\nnodes:\n  - {id: pause, kind: wait, seconds: 1}\n  - {id: ok, kind: approval, title: "Go?"}\nedges:\n  - {source: pause, target: ok}\n`;
    const w = (await api('POST', `/api/projects/${projectId}/workflows`, { token: owner, body: { name: 'w', definitionYaml: yaml } })).json;
    await api('PATCH', `/api/workflows/${w.id}`, { token: owner, body: { status: 'published' } });
    const r = (await api('POST', `/api/workflows/${w.id}/runs`, { token: owner, body: {} })).json;
    expect((await run(r.runId)).status).to.equal('waiting');
    await decide(await pendingGateOf(r.runId), 'rejected');
    await eventually(async () => (await run(r.runId)).status === 'failed', 'run failed');
    expect((await run(r.runId)).error).to.contain('rejected');
    expect((await api('GET', `/api/workflow-runs/${r.runId}`, { token: other })).status).to.equal(404);
  });
});
