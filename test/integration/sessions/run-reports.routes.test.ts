// Invariant (issue 34, decision 0076): what the worker holding a session reports about its run with a status (the
// agent, its usage, its workspace) is kept, the latest of each, and shown in the session detail for the current run;
// a usage cost is the report's cost when it names none. A malformed member is a 400 that changes nothing, a refused
// move keeps nothing, and only the holding worker is heard. Tool steps become `tool` activities, once however often
// a worker retries them, and beat the step heartbeat; a worker that no longer holds the session gets 409, one of
// another org or project 404. Another org never reads any of it.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { insertProject } from '../../../storage/identity/orgs.js';
import { agentSessionIdOf } from '../../../storage/sessions/run-reports.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { sessionKeyOf } from '../../support/session-keys.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from './support.js';

const sha = (c: string) => c.repeat(40);
const workspace = (over: Record<string, unknown> = {}) => ({
  repository: randomUUID(), branch: 'troupe/abc', baseCommit: sha('a'), headCommit: sha('b'),
  commits: [{ sha: sha('b'), subject: 'Add the greeting' }, { sha: sha('c'), subject: 'Start the greeting' }],
  filesChanged: 2, insertions: 14, deletions: 3, dirty: false, pushed: true, ...over,
});

for (const { set, skip } of engineSets) describe(`sessions: run reports and tool steps (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let worker: Daemon;
  let otherWorker: Daemon;
  let globexWorker: Daemon;

  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
    worker = await registerDaemon(t, acme, 'acme-1');
    otherWorker = await registerDaemon(t, acme, 'acme-2');
    globexWorker = await registerDaemon(t, globex, 'globex-1');
  });
  after(() => t?.close());

  const detail = async (id: string, org = acme) => (await t.inject('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json;
  const running = async (d = worker) => {
    const id = await dispatch(t, acme);
    for (const status of ['claimed', 'running']) expect((await report(t, d, id, status)).status).to.equal(200);
    return id;
  };
  const steps = (id: string, body: Record<string, unknown>, d = worker) =>
    t.inject('POST', `/api/sessions/${id}/steps`, { token: d.runtimeJwt, body: { workerId: d.workerId, ...body } });
  const toolBodies = async (id: string) => ((await detail(id)).activities as Array<{ kind: string; body: string }>).filter((a) => a.kind === 'tool').map((a) => a.body);

  it('keeps the agent, usage and workspace of the current run, the latest of each, and carries the usage cost', async () => {
    const id = await dispatch(t, acme);
    expect(await detail(id)).to.include({ agent: null, usage: null, workspace: null, pullRequest: null });
    expect((await report(t, worker, id, 'claimed', { agent: { preset: 'claude-code' } })).status).to.equal(200);
    expect((await detail(id)).agent).to.deep.equal({ preset: 'claude-code', agentSessionId: null });
    const started = await report(t, worker, id, 'running', { agent: { preset: 'claude-code', agentSessionId: 'conv-1' }, usage: { inputTokens: 10, outputTokens: 5 } });
    expect(started.status, started.text).to.equal(200);
    const reported = workspace();
    const finalizing = await report(t, worker, id, 'finalizing', { usage: { inputTokens: 1200, outputTokens: 340, costUsd: 0.42 }, workspace: reported });
    expect(finalizing.json).to.deep.equal({ sessionId: id, previousStatus: 'running', newStatus: 'finalizing' });
    expect((await report(t, worker, id, 'completed')).status).to.equal(200);

    const shown = await detail(id);
    expect(shown.agent, 'a report without the agent keeps the one before').to.deep.equal({ preset: 'claude-code', agentSessionId: 'conv-1' });
    expect(shown.usage).to.deep.equal({ inputTokens: 1200, outputTokens: 340, costUsd: 0.42 });
    expect(shown.workspace).to.deep.equal(reported);
    expect(shown.costUsd, "the usage's cost is the report's").to.equal(0.42);
    expect(shown.pullRequest, 'no repository, no pull request').to.equal(null);

    // A prompt starts run 2: its detail starts empty, and run 1's conversation stays there to resume.
    expect((await t.inject('POST', `/api/public/sessions/${id}/prompt`, { token: acme.apiKey, body: { prompt: 'and the farewell' } })).status).to.equal(200);
    expect(await detail(id)).to.include({ run: 2, agent: null, usage: null, workspace: null });
    const key = await sessionKeyOf(t.node.deps.db, acme.orgId, id);
    expect(await agentSessionIdOf(t.node.deps.db, acme.orgId, key)).to.equal('conv-1');
    expect(await agentSessionIdOf(t.node.deps.db, globex.orgId, key), 'not from another org').to.equal(undefined);
  });

  it('an explicit cost wins over the usage cost', async () => {
    const id = await running();
    expect((await report(t, worker, id, 'finalizing', { costUsd: 1.5, usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.25 } })).status).to.equal(200);
    expect(await detail(id)).to.deep.include({ costUsd: 1.5, usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.25 } });
  });

  it('refuses malformed members with 400 naming them, and keeps nothing of such a report, not even its move', async () => {
    const id = await running();
    expect((await report(t, worker, id, 'running', { agent: { preset: 'codex' } })).status).to.equal(200);
    const before = await detail(id);
    const bad: Array<Record<string, unknown>> = [
      { agent: {} }, { agent: { preset: 'x'.repeat(41) } }, { agent: { preset: 'codex', agentSessionId: 'y'.repeat(201) } },
      { agent: { preset: 'codex', model: 'gpt' } }, { agent: 'codex' },
      { usage: { inputTokens: -1, outputTokens: 0 } }, { usage: { inputTokens: 1.5, outputTokens: 0 } }, { usage: { inputTokens: 1 } },
      { usage: { inputTokens: 1, outputTokens: 1, costUsd: -0.01 } }, { usage: { inputTokens: 1, outputTokens: 1, cost: 1 } },
      { workspace: workspace({ baseCommit: 'abc123' }) }, { workspace: workspace({ headCommit: sha('G') }) },
      { workspace: workspace({ commits: Array.from({ length: 101 }, () => ({ sha: sha('d'), subject: 's' })) }) },
      { workspace: workspace({ commits: [{ sha: sha('d'), subject: 's'.repeat(301) }] }) },
      { workspace: workspace({ commits: [{ sha: sha('d') }] }) }, { workspace: workspace({ pushed: 'yes' }) },
      { workspace: workspace({ filesChanged: -1 }) }, { workspace: workspace({ pushError: 'e'.repeat(2001) }) },
      { workspace: workspace({ branch: '' }) }, { workspace: workspace({ stash: true }) }, { workspace: { ...workspace(), dirty: undefined } },
      { agents: { preset: 'codex' } },
    ];
    for (const extra of bad) {
      const res = await report(t, worker, id, 'finalizing', { usage: { inputTokens: 7, outputTokens: 7 }, ...extra });
      expect(res.status, JSON.stringify(extra).slice(0, 200)).to.equal(400);
      expect(res.json.code).to.equal('VALIDATION_FAILED');
      expect(res.json.details.field, 'the member at fault is named').to.satisfy((f: string) => f.split('.')[0] === Object.keys(extra)[0]);
    }
    // A move the machine refuses keeps nothing either, however well formed.
    const illegal = await report(t, worker, id, 'claimed', { agent: { preset: 'gemini' }, usage: { inputTokens: 9, outputTokens: 9 } });
    expect(illegal.status).to.equal(409);
    const after = await detail(id);
    expect(after).to.deep.include({ status: 'running', agent: before.agent, usage: null, workspace: null, costUsd: before.costUsd });
  });

  it('hears only the worker holding the session: another worker of the org 409, another org 404, and nothing is kept', async () => {
    const id = await running();
    const another = await report(t, otherWorker, id, 'running', { agent: { preset: 'gemini', agentSessionId: 'stolen' } });
    expect(another.status).to.equal(409);
    const foreign = await report(t, globexWorker, id, 'running', { agent: { preset: 'gemini' } });
    expect(foreign.status).to.equal(404);
    expect((await detail(id)).agent).to.equal(null);
    // And another org's people do not read the reports of the session.
    expect((await report(t, worker, id, 'running', { agent: { preset: 'codex', agentSessionId: 'mine' } })).status).to.equal(200);
    const theirs = await t.inject('GET', `/api/public/sessions/${id}`, { token: globex.apiKey });
    expect(theirs.status).to.equal(404);
    expect(theirs.text).to.not.contain('mine');
  });

  it('lists tool steps as activities in order, records a retried request once, and beats the step heartbeat', async () => {
    const id = await running();
    expect((await detail(id)).lastToolCalledAt).to.equal(null);
    // Times after the claim and before now, so the node keeps each as sent and they order the steps.
    await new Promise((r) => setTimeout(r, 40));
    const t0 = Date.now() - 20;
    const batch = {
      steps: [
        { tool: 'Bash', summary: 'npm test', at: new Date(t0).toISOString() },
        { tool: 'Edit', summary: 'src/greeting.ts', at: new Date(t0 + 5).toISOString() },
        { tool: 'Edit', summary: 'src/greeting.ts', at: new Date(t0 + 5).toISOString() },
      ],
    };
    const first = await steps(id, batch);
    expect([first.status, first.json]).to.deep.equal([202, { ok: true, accepted: 3, recorded: 3 }]);
    const retried = await steps(id, batch);
    expect([retried.status, retried.json]).to.deep.equal([202, { ok: true, accepted: 3, recorded: 0 }]);
    // Steps the worker names are known by their name, whatever else a retry says of them.
    expect((await steps(id, { steps: [{ id: 'step-9', tool: 'Read', summary: 'README.md', at: new Date(t0 + 10).toISOString() }] })).json.recorded).to.equal(1);
    expect((await steps(id, { steps: [{ id: 'step-9', tool: 'Read', summary: 'README.md', at: new Date(t0 + 11).toISOString() }] })).json.recorded).to.equal(0);
    expect(await toolBodies(id)).to.deep.equal(['Bash: npm test', 'Edit: src/greeting.ts', 'Edit: src/greeting.ts', 'Read: README.md']);
    await eventually(async () => typeof (await detail(id)).lastToolCalledAt === 'string', 'lastToolCalledAt recorded by the steps');
  });

  it('answers 409 once the worker no longer holds the session, 404 outside its org or projects, 400 to bad bodies; writes nothing', async () => {
    const id = await running();
    const at = new Date().toISOString();
    expect((await steps(id, { steps: [{ tool: 'Bash', summary: 'ls', at }] })).status).to.equal(202);
    for (const body of [
      { steps: [] }, { steps: Array.from({ length: 101 }, (_, i) => ({ tool: 'Bash', summary: `s${i}`, at })) },
      { steps: [{ tool: '', summary: 'x', at }] }, { steps: [{ tool: 'T'.repeat(101), summary: 'x', at }] },
      { steps: [{ tool: 'Bash', summary: 'x'.repeat(201), at }] }, { steps: [{ tool: 'Bash', summary: 'x', at: 'yesterday' }] },
      { steps: [{ tool: 'Bash', summary: 'x' }] }, { steps: [{ tool: 'Bash', summary: 'x', at, input: 'rm -rf' }] },
      { steps: [{ tool: 'Bash', summary: 'x', at, id: '../../x' }] }, { steps: [{ tool: 'Bash', summary: 'x', at }], extra: 1 },
    ]) {
      const res = await steps(id, body);
      expect(res.status, JSON.stringify(body).slice(0, 120)).to.equal(400);
      expect(res.json.code).to.match(/^[A-Z_]+$/);
    }
    const mismatched = await t.inject('POST', `/api/sessions/${id}/steps`, { token: worker.runtimeJwt, body: { workerId: otherWorker.workerId, steps: [{ tool: 'Bash', summary: 'forged', at }] } });
    expect(mismatched.status).to.equal(403);
    expect((await steps(id, { steps: [{ tool: 'Bash', summary: 'not mine', at }] }, otherWorker)).status).to.equal(409);
    expect((await steps(id, { steps: [{ tool: 'Bash', summary: 'foreign', at }] }, globexWorker)).status).to.equal(404);
    expect((await steps('0123456789abcdef', { steps: [{ tool: 'Bash', summary: 'nobody', at }] })).status).to.equal(404);

    // A worker of another project of the same org does not find the session.
    const secondProject = randomUUID();
    await insertProject(t.node.deps.db, { id: secondProject, orgId: acme.orgId, name: 'Second', slug: `second-${secondProject.slice(0, 8)}` });
    const issued = await t.inject('POST', `/api/org/${acme.orgId}/registration-tokens`, { token: acme.ownerToken, body: { name: 'second', projects: [secondProject] } });
    expect(issued.status, issued.text).to.equal(201);
    const registered = await t.inject('POST', '/v1/daemon/register', { body: { registrationToken: issued.json.registrationToken, hostname: 'second-host', maxAgents: 1 } });
    const projectWorker = { workerId: registered.json.workerId, runtimeJwt: registered.json.runtimeJwt };
    expect((await steps(id, { steps: [{ tool: 'Bash', summary: 'other project', at }] }, projectWorker)).status).to.equal(404);

    expect((await t.inject('POST', `/api/public/sessions/${id}/stop`, { token: acme.apiKey })).json.stopped).to.equal(true);
    const late = await steps(id, { steps: [{ tool: 'Bash', summary: 'after the stop', at }] });
    expect(late.status).to.equal(409);
    expect(late.json.code).to.equal('CONFLICT');
    expect(await toolBodies(id)).to.deep.equal(['Bash: ls']);
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: globex.apiKey })).status).to.equal(404);
  });
});
