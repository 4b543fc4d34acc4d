// Invariant (issue 35 §2, decision 0080): a project's budget is set by org admins and owners only (members, viewers,
// project admins and read keys 403; another org's project or an unknown id 404; a bad body 400, each changing nothing),
// read by the project's readers with the month's spend, and audited when it changes. A project whose month-to-date
// spend is at or over its monthly budget dispatches nothing — the API answers 409 BUDGET_EXCEEDED with the spend and
// the limit, a workflow agent step fails with that reason — and dispatches again once the budget is raised. A running
// session whose reported cost passes the per-session budget is stopped by the server: the worker hears `stop`, the
// detail shows `stopped` with `stopReason: "budget"`, and the audit chain has the stop.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import type { SseClient } from '../streams/sse-client.js';
import { dispatch, provisionOrg, registerDaemon, report, type Org } from '../sessions/support.js';
import { auditOf, connect, expectRefused, people, type People } from '../queue-control/support.js';

for (const { set, skip } of engineSets) describe(`project budgets (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let who: People;
  const streams: SseClient[] = [];
  before(async () => {
    t = await startTestNode({ engines: set });
    [acme, globex] = await Promise.all([provisionOrg(t, 'Acme'), provisionOrg(t, 'Globex')]);
    who = await people(t, acme);
  });
  after(async () => {
    for (const s of streams) s.close();
    await t?.close();
  });

  const budgetPath = (org: Org) => `/api/projects/${org.projectId}/budget`;
  const put = (org: Org, body: unknown, token = org.ownerToken) => t.call('PUT', budgetPath(org), { token, body });
  const read = async (org: Org, token = org.ownerToken) => {
    const res = await t.call('GET', budgetPath(org), { token });
    expect(res.status, res.text).to.equal(200);
    return res.json;
  };
  const sessionCount = async (org: Org): Promise<number> => (await t.call('GET', '/api/fleet/stats', { token: org.apiKey })).json.sessions.total;
  /** A session of `org` run to its end by a worker, having cost `costUsd`. */
  const spend = async (org: Org, costUsd: number) => {
    const d = await registerDaemon(t, org, `spender-${randomUUID().slice(0, 6)}`);
    const id = await dispatch(t, org);
    for (const status of ['claimed', 'running', 'finalizing']) expect((await report(t, d, id, status)).status, status).to.equal(200);
    expect((await report(t, d, id, 'completed', { costUsd })).status).to.equal(200);
  };

  it('is set by org admins and owners, read by project readers, audited, and null clears a member', async () => {
    const monthStartsAt = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).toISOString();
    expect(await read(acme, who.projectViewer)).to.deep.equal({
      projectId: acme.projectId, monthlyUsd: null, perSessionUsd: null, spentThisMonthUsd: 0, monthStartsAt,
    });
    const set = await put(acme, { monthlyUsd: 100, perSessionUsd: 2.5 }, who.orgAdmin);
    expect(set.status, set.text).to.equal(200);
    expect(set.json).to.deep.equal({ projectId: acme.projectId, monthlyUsd: 100, perSessionUsd: 2.5, spentThisMonthUsd: 0, monthStartsAt });
    expect(await read(acme, who.readKey)).to.deep.equal(set.json);

    const cleared = await put(acme, { perSessionUsd: null });
    expect(cleared.json).to.include({ monthlyUsd: 100, perSessionUsd: null });
    // Setting what is set changes nothing and is not audited.
    expect((await put(acme, { monthlyUsd: 100 })).json).to.deep.equal(cleared.json);
    expect((await put(acme, { monthlyUsd: null })).json).to.include({ monthlyUsd: null, perSessionUsd: null });

    const entries = await auditOf(t, acme, ['project.budget.changed']);
    expect(entries.map((e) => [e.subject, e.payload.before, e.payload.after])).to.deep.equal([
      [acme.projectId, { monthlyUsd: null, perSessionUsd: null }, { monthlyUsd: 100, perSessionUsd: 2.5 }],
      [acme.projectId, { monthlyUsd: 100, perSessionUsd: 2.5 }, { monthlyUsd: 100, perSessionUsd: null }],
      [acme.projectId, { monthlyUsd: 100, perSessionUsd: null }, { monthlyUsd: null, perSessionUsd: null }],
    ]);
    expect(entries[0]!.actor).to.match(/^user:/);
  });

  it('refuses other roles (403), another org and unknown projects (404) and bad bodies (400), changing nothing', async () => {
    const org = await provisionOrg(t, 'Strict');
    const staff = await people(t, org);
    expect((await put(org, { monthlyUsd: 7 })).status).to.equal(200);
    const before = await read(org);
    for (const [who, token] of Object.entries({ ...staff, orgAdmin: undefined })) {
      if (token === undefined) continue;
      expectRefused(await put(org, { monthlyUsd: 1 }, token), 403, 'AUTHZ_DENIED', who);
    }
    const member = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email: `${randomUUID().slice(0, 8)}@b.test`, role: 'member' } });
    expectRefused(await put(org, { monthlyUsd: 1 }, member.json.userToken), 403, 'AUTHZ_DENIED', 'member');

    expectRefused(await put(org, { monthlyUsd: 1 }, globex.ownerToken), 404, 'NOT_FOUND', 'another org');
    expectRefused(await t.call('GET', budgetPath(org), { token: globex.ownerToken }), 404, 'NOT_FOUND', 'another org reads');
    expectRefused(await t.call('PUT', `/api/projects/${randomUUID()}/budget`, { token: org.ownerToken, body: { monthlyUsd: 1 } }), 404, 'NOT_FOUND', 'unknown');
    expectRefused(await t.call('PUT', '/api/projects/not-a-uuid/budget', { token: org.ownerToken, body: { monthlyUsd: 1 } }), 404, 'NOT_FOUND', 'malformed id');

    const bad: unknown[] = [
      {}, { monthlyUsd: -1 }, { perSessionUsd: '5' }, { monthlyUsd: 1e12 }, { monthlyUsd: 1, extra: true }, [], null, 'x',
      { monthlyUsd: Number.MAX_VALUE },
    ];
    for (const body of bad) expectRefused(await put(org, body), 400, 'VALIDATION_FAILED', JSON.stringify(body));
    const broken = await t.call('PUT', budgetPath(org), { token: org.ownerToken, rawBody: '{"monthlyUsd": ', headers: { 'content-type': 'application/json' } });
    expect(broken.status).to.equal(400);
    expect(await read(org)).to.deep.equal(before);
    expect(await auditOf(t, org, ['project.budget.changed'])).to.have.length(1);
  });

  it('refuses dispatch at the monthly limit with nothing created, and dispatches again once the budget is raised', async () => {
    const org = await provisionOrg(t, 'Spender');
    const first = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Before the limit', trackerSessionId: 'budget-retry-1' } });
    expect(first.status, first.text).to.equal(201);
    await spend(org, 3);
    await spend(org, 2);
    expect((await put(org, { monthlyUsd: 5 })).json).to.include({ spentThisMonthUsd: 5 });
    // A retry of a dispatch that already made its session (its reply was lost) is answered as that dispatch was.
    const retried = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Before the limit', trackerSessionId: 'budget-retry-1' } });
    expect(retried.status, retried.text).to.be.oneOf([200, 201]);
    expect(retried.json.sessionId).to.equal(first.json.sessionId);
    const sessions = await sessionCount(org);
    const refused = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'One more' } });
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.json).to.deep.include({ code: 'BUDGET_EXCEEDED', details: { spentUsd: 5, limitUsd: 5 } });
    expect(await sessionCount(org)).to.equal(sessions);
    const documented = (await t.call('GET', '/api/openapi.json', {})).json.paths['/api/agent-dispatch'].post.responses['409'];
    expect(documented.description).to.contain('BUDGET_EXCEEDED');
    const stats = (await t.call('GET', '/api/fleet/stats', { token: org.apiKey })).json;
    expect(stats.budgets).to.deep.equal([{ projectId: org.projectId, monthlyUsd: 5, perSessionUsd: null, spentThisMonthUsd: 5 }]);

    // A workflow agent step in the same project fails with the reason, starting no session.
    const definitionYaml = ['schemaVersion: v2', 'name: over', 'trigger: {type: manual}', 'nodes:', '  - {id: fix, kind: agent, prompt: "Fix it"}', 'edges: []', ''].join('\n');
    const wf = await t.call('POST', `/api/projects/${org.projectId}/workflows`, { token: org.ownerToken, body: { name: 'over', definitionYaml } });
    expect(wf.status, wf.text).to.equal(201);
    expect((await t.call('PATCH', `/api/workflows/${wf.json.id}`, { token: org.ownerToken, body: { status: 'published' } })).status).to.equal(200);
    const run = await t.call('POST', `/api/workflows/${wf.json.id}/runs`, { token: org.ownerToken, body: {} });
    expect(run.status, run.text).to.equal(201);
    const runOf = async () => (await t.call('GET', `/api/workflow-runs/${run.json.runId}`, { token: org.ownerToken })).json;
    await eventually(async () => (await runOf()).status === 'failed', 'the run over budget failed');
    expect(((await runOf()).steps as { error?: string }[]).map((s) => s.error ?? '').join('\n')).to.contain('BUDGET_EXCEEDED');
    expect(await sessionCount(org)).to.equal(sessions);

    expect((await put(org, { monthlyUsd: 10 })).status).to.equal(200);
    const allowed = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'One more' } });
    expect(allowed.status, allowed.text).to.equal(201);
    // Another project of the org, and another org, are not held by this budget.
    expect((await t.call('POST', '/api/agent-dispatch', { token: globex.apiKey, body: { projectId: globex.projectId, prompt: 'x' } })).status).to.equal(201);
  });

  it('stops a running session whose reported cost passes the per-session budget, with stopReason budget and an audit entry', async () => {
    const org = await provisionOrg(t, 'Runaway');
    expect((await put(org, { perSessionUsd: 1 })).status).to.equal(200);
    const d = await registerDaemon(t, org, 'runaway-1');
    const stream = await connect(t, d, streams);
    const id = await dispatch(t, org);
    for (const status of ['claimed', 'running']) expect((await report(t, d, id, status)).status).to.equal(200);
    // At the budget is not past it.
    expect((await report(t, d, id, 'running', { costUsd: 1 })).status).to.equal(200);
    expect((await t.call('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json).to.include({ status: 'running', stopReason: null });

    const over = await report(t, d, id, 'running', { usage: { inputTokens: 100, outputTokens: 50, costUsd: 1.25 } });
    expect(over.status, over.text).to.equal(200);
    await stream.next((f) => f.event === 'stop' && f.data.sessionId === id, 2_000);
    const detail = (await t.call('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json;
    expect(detail).to.include({ status: 'stopped', stopReason: 'budget', costUsd: 1.25 });
    const audited = await auditOf(t, org, ['session.stopped']);
    expect(audited.map((e) => [e.subject, e.actor, e.payload.stopReason])).to.deep.equal([[id, 'system:budget', 'budget']]);

    // A session stopped by a person shows no budget reason; a finalizing report past the budget is stopped too.
    const manual = await dispatch(t, org);
    await report(t, d, manual, 'claimed');
    expect((await t.call('POST', `/api/public/sessions/${manual}/stop`, { token: org.apiKey })).status).to.equal(200);
    expect((await t.call('GET', `/api/public/sessions/${manual}`, { token: org.apiKey })).json).to.include({ status: 'stopped', stopReason: null });
    const late = await dispatch(t, org);
    for (const status of ['claimed', 'running']) await report(t, d, late, status);
    expect((await report(t, d, late, 'finalizing', { costUsd: 3 })).status).to.equal(200);
    expect((await t.call('GET', `/api/public/sessions/${late}`, { token: org.apiKey })).json).to.include({ status: 'stopped', stopReason: 'budget' });
  });
});
