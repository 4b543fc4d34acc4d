// Invariant (issue 36, decision 0085): within an org, projects with pending sessions are offered in turns, least
// recently served first, each turn `weight` sessions (1 by default), so a burst of 10,000 dispatches in one project
// holds a single session of another back by at most one offer round; within a project the highest priority goes first
// and first come first served within one. The weight is the org admins' and owners' (403 to project roles, members and
// read keys), readable by project readers, audited, 400 out of 1..100 changing nothing, and 404 for another org's project.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { insertProject } from '../../../storage/identity/orgs.js';
import { dispatch, provisionOrg, report, type Daemon, type Org } from '../sessions/support.js';
import { auditOf, expectRefused, people, polled, type People } from './support.js';

for (const { set, skip } of engineSets) describe(`fair offers across projects (${set} engines)`, function () {
  if (skip) return;
  this.timeout(300_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let who: People;
  before(async () => {
    t = await startTestNode({ engines: set });
    [acme, globex] = await Promise.all([provisionOrg(t, 'Acme'), provisionOrg(t, 'Globex')]);
    who = await people(t, acme);
  });
  after(async () => { await t?.close(); });

  /** A second project in the org, and a worker serving both it and the first. */
  async function twoProjects(org: Org, hostname: string): Promise<{ second: string; worker: Daemon }> {
    const second = randomUUID();
    await insertProject(t.node.deps.db, { id: second, orgId: org.orgId, name: 'Second', slug: `second-${second.slice(0, 8)}` });
    const issued = await t.inject('POST', `/api/org/${org.orgId}/registration-tokens`, { token: org.ownerToken, body: { name: hostname, projects: [org.projectId, second] } });
    expect(issued.status, issued.text).to.equal(201);
    const registered = await t.inject('POST', '/v1/daemon/register', { body: { registrationToken: issued.json.registrationToken, hostname, maxAgents: 1 } });
    expect(registered.status, registered.text).to.equal(200);
    return { second, worker: { workerId: registered.json.workerId, runtimeJwt: registered.json.runtimeJwt } };
  }

  /** What a worker of capacity 1 runs, one session at a time: polled, claimed and run to its end. */
  async function runOne(d: Daemon): Promise<string> {
    const offered = await polled(t, d, 1);
    expect(offered).to.have.length(1);
    const id = offered[0]!;
    for (const status of ['claimed', 'running', 'finalizing', 'completed']) expect((await report(t, d, id, status)).status, status).to.equal(200);
    return id;
  }

  async function burst(org: Org, n: number, extra: Record<string, unknown> = {}): Promise<void> {
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < n) {
        next += 1;
        await dispatch(t, org, extra);
      }
    }));
  }

  it('claims a single session of another project within the first two claims behind a burst of 10,000', async () => {
    const org = await provisionOrg(t, 'Burst');
    const { second, worker } = await twoProjects(org, 'burst-host');
    await burst(org, 10_000);
    const lone = await dispatch(t, org, { projectId: second });
    const claims = [await runOne(worker), await runOne(worker)];
    expect(claims, 'the lone session among the first two claims').to.include(lone);
    // The burst goes on after it, in its own order.
    const third = await runOne(worker);
    expect(third).to.not.equal(lone);
    const pending = (await t.call('GET', `/api/projects/${org.projectId}/queue`, { token: org.ownerToken })).json.pending;
    expect(pending).to.equal(10_000 - 2);
  });

  it("gives a project of weight 3 three offers a round to the other's one, highest priority first within a project", async () => {
    const org = await provisionOrg(t, 'Weighted');
    const { second, worker } = await twoProjects(org, 'weighted-host');
    const set = await t.call('PUT', `/api/projects/${org.projectId}/queue`, { token: org.ownerToken, body: { weight: 3 } });
    expect([set.status, set.json.weight], set.text).to.deep.equal([200, 3]);
    const a = [await dispatch(t, org, { priority: 2 }), await dispatch(t, org), await dispatch(t, org), await dispatch(t, org, { priority: 9 }),
      await dispatch(t, org), await dispatch(t, org)];
    const b = [await dispatch(t, org, { projectId: second }), await dispatch(t, org, { projectId: second, priority: 7 }), await dispatch(t, org, { projectId: second })];
    const order: string[] = [];
    for (let i = 0; i < 9; i++) order.push(await runOne(worker));
    // A: its 9, then its 5s oldest first, its 2 last; B: its 7 first. Each round A three, B one: in the first, B's 7
    // comes before A's 5s (within a round, priority then age); in the second, B first, having finished its turn first.
    const name = (id: string) => (a.includes(id) ? `a${a.indexOf(id)}` : `b${b.indexOf(id)}`);
    expect(order.map(name)).to.deep.equal(['a3', 'b1', 'a1', 'a2', 'b0', 'a4', 'a5', 'a0', 'b2']);
  });

  it('takes one poll of several places across projects in turn', async () => {
    const org = await provisionOrg(t, 'Spread');
    const { second, worker } = await twoProjects(org, 'spread-host');
    const a = [await dispatch(t, org), await dispatch(t, org), await dispatch(t, org)];
    const b = [await dispatch(t, org, { projectId: second }), await dispatch(t, org, { projectId: second })];
    expect(await polled(t, worker, 4)).to.deep.equal([a[0], b[0], a[1], b[1]]);
  });

  it('lets org admins, owners and admin keys set the weight, audited once; project readers read it', async () => {
    const path = `/api/projects/${acme.projectId}/queue`;
    for (const token of [who.projectAdmin, who.projectEditor, who.projectViewer, who.orgViewer, acme.memberToken, who.readKey]) {
      expectRefused(await t.call('PUT', path, { token, body: { weight: 2 } }), 403, 'AUTHZ_DENIED', 'a role without manage-org');
    }
    expect((await t.call('GET', path, { token: who.projectViewer })).json.weight).to.equal(1);
    expect((await t.call('PUT', path, { token: who.orgAdmin, body: { weight: 2 } })).json.weight).to.equal(2);
    expect((await t.call('PUT', path, { token: acme.apiKey, body: { weight: 2 } })).json.weight, 'unchanged').to.equal(2);
    expect((await t.call('PUT', path, { token: acme.ownerToken, body: { weight: 5 } })).json.weight).to.equal(5);
    const shown = await t.call('GET', path, { token: who.projectViewer });
    expect([shown.status, shown.json.weight, shown.json.paused]).to.deep.equal([200, 5, false]);
    const audited = await auditOf(t, acme, ['queue.weight_changed']);
    expect(audited.map((e) => [e.payload.before, e.payload.after])).to.deep.equal([[1, 2], [2, 5]]);
  });

  it("refuses weights outside 1..100 with 400 changing nothing, and another org's or an unknown project with 404", async () => {
    const path = `/api/projects/${globex.projectId}/queue`;
    for (const body of [{ weight: 0 }, { weight: 101 }, { weight: 1.5 }, { weight: '3' }, {}, { weight: 2, extra: true }]) {
      expectRefused(await t.call('PUT', path, { token: globex.ownerToken, body }), 400, 'VALIDATION_FAILED', JSON.stringify(body));
    }
    expect((await t.call('GET', path, { token: globex.ownerToken })).json.weight).to.equal(1);
    expectRefused(await t.call('PUT', path, { token: acme.ownerToken, body: { weight: 2 } }), 404, 'NOT_FOUND', "another org's project");
    expectRefused(await t.call('GET', path, { token: acme.ownerToken }), 404, 'NOT_FOUND', "another org's project");
    expectRefused(await t.call('PUT', `/api/projects/${randomUUID()}/queue`, { token: acme.ownerToken, body: { weight: 2 } }), 404, 'NOT_FOUND', 'no project');
    expectRefused(await t.call('PUT', '/api/projects/not-a-uuid/queue', { token: acme.ownerToken, body: { weight: 2 } }), 404, 'NOT_FOUND', 'a bad id');
    expect((await t.call('GET', path, { token: globex.ownerToken })).json.weight, 'unchanged').to.equal(1);
  });
});
