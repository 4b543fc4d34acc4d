// Invariant: escalating a run's approval gate whose node says `onEscalate: live-session` dispatches a session driven by
// the deciding user, with the run's context, visible in the org's session list and to no other org; the run resumes
// when that session ends and takes its outcome (completed: on to the next node; failed: the run fails). A gate
// without `onEscalate` resumes the run at once on escalate, as before, and dispatches nothing.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { consoleOrg, SimulatedWorker, type ConsoleOrg } from '../console/world.js';

const liveGate = `schemaVersion: v2
name: ship-with-a-human
trigger: {type: manual}
nodes:
  - {id: gate, kind: approval, title: "Ship it?", prompt: "Walk the release checklist with the approver", onEscalate: live-session}
  - {id: after, kind: wait, seconds: 0}
edges:
  - {source: gate, target: after}
`;
const plainGate = liveGate.replace(', onEscalate: live-session', '');

interface Step { nodeId: string; status: string; sessionId?: string; decision?: string; driver?: string }

for (const { set, skip } of engineSets) describe(`workflow runs: escalating a gate to a live session (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: ConsoleOrg;
  let globex: ConsoleOrg;
  let admin: { userId: string; token: string };
  let worker: SimulatedWorker;

  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await consoleOrg(t);
    globex = await consoleOrg(t);
    const created = await t.call('POST', `/api/admin/orgs/${acme.orgId}/users`, { token: t.adminToken, body: { email: `admin-${Date.now()}@acme.test`, role: 'admin' } });
    expect(created.status, created.text).to.equal(201);
    admin = { userId: created.json.user.id, token: created.json.userToken };
    worker = await SimulatedWorker.register(t, acme);
  });
  after(() => t?.close());

  const runOf = async (runId: string, token = acme.owner.token) => t.call('GET', `/api/workflow-runs/${runId}`, { token });

  async function startRun(definitionYaml: string, input: Record<string, unknown>): Promise<string> {
    const created = await t.call('POST', `/api/projects/${acme.projectId}/workflows`, { token: acme.owner.token, body: { name: 'ship', definitionYaml } });
    expect(created.status, created.text).to.equal(201);
    const published = await t.call('PATCH', `/api/workflows/${created.json.id}`, { token: acme.owner.token, body: { status: 'published' } });
    expect(published.status, published.text).to.equal(200);
    const started = await t.call('POST', `/api/workflows/${created.json.id}/runs`, { token: acme.owner.token, body: { input } });
    expect(started.status, started.text).to.equal(201);
    return started.json.runId;
  }

  async function pendingGateOf(runId: string): Promise<string> {
    let id: string | undefined;
    await eventually(async () => {
      const gates = (await t.call('GET', '/api/approval-gates?status=pending', { token: admin.token })).json.gates as { id: string; runId: string }[];
      id = gates.find((g) => g.runId === runId)?.id;
      return id !== undefined;
    }, `the gate of run ${runId}`);
    return id!;
  }

  /** Escalates the run's gate as the admin and answers the session the run then waits on, by its public id. */
  async function escalate(runId: string): Promise<string> {
    const decided = await t.call('POST', `/api/approval-gates/${await pendingGateOf(runId)}/decide`, { token: admin.token, body: { decision: 'escalate' } });
    expect(decided.status, decided.text).to.equal(200);
    expect(decided.json.decision).to.equal('escalated');
    expect(decided.json.gate.driver).to.equal(`user:${admin.userId}`);
    let sessionId: string | undefined;
    await eventually(async () => {
      sessionId = ((await runOf(runId)).json.steps as Step[]).at(-1)?.sessionId;
      if (sessionId === undefined) return false;
      const detail = await t.call('GET', `/api/public/sessions/${sessionId}`, { token: acme.owner.token });
      return detail.status === 200 && detail.json.id === sessionId;
    }, 'the run dispatched the live session');
    return sessionId!;
  }

  it('dispatches a session driven by the approver with the run\'s context, and completes the run when it completes', async () => {
    const runId = await startRun(liveGate, { ticket: 'ENG-7' });
    const sessionId = await escalate(runId);

    const running = (await runOf(runId)).json;
    expect(running.status).to.equal('running');
    expect(running.steps).to.have.length(1);
    expect(running.steps[0]).to.include({ nodeId: 'gate', status: 'running', decision: 'escalated', driver: `user:${admin.userId}`, sessionId });

    const detail = await t.call('GET', `/api/public/sessions/${sessionId}`, { token: acme.owner.token });
    expect(detail.status, detail.text).to.equal(200);
    expect(detail.json.requestedBy).to.equal(`user:${admin.userId}`);
    expect(detail.json.project.id).to.equal(acme.projectId);
    expect(detail.json.prompt).to.contain('Walk the release checklist with the approver')
      .and.to.contain(`run ${runId}`).and.to.contain('"ticket":"ENG-7"');
    const listed = await t.call('GET', '/api/sessions', { token: acme.owner.token });
    expect(listed.json.sessions.map((s: { id: string }) => s.id)).to.include(sessionId);
    expect((await t.call('GET', `/api/public/sessions/${sessionId}`, { token: globex.owner.token })).status).to.equal(404);
    expect((await t.call('GET', '/api/sessions', { token: globex.owner.token })).json.sessions).to.deep.equal([]);

    await worker.claim(sessionId);
    await worker.move(sessionId, 'running');
    expect((await runOf(runId)).json.status, 'the run waits while the session is live').to.equal('running');
    await worker.move(sessionId, 'finalizing');
    await worker.move(sessionId, 'completed');
    await eventually(async () => (await runOf(runId)).json.status === 'completed', 'the run completed');
    const done = (await runOf(runId)).json;
    expect(done.steps.map((s: Step) => `${s.nodeId}:${s.status}`)).to.deep.equal(['gate:completed', 'after:completed']);
    expect(done.steps[0]).to.include({ decision: 'escalated', sessionId });
    expect((await runOf(runId, globex.owner.token)).status).to.equal(404);
  });

  it('fails the run when the live session fails, as a failed agent step does', async () => {
    const runId = await startRun(liveGate, {});
    const sessionId = await escalate(runId);
    await worker.claim(sessionId);
    await worker.move(sessionId, 'running');
    await worker.move(sessionId, 'finalizing');
    await worker.move(sessionId, 'failed', { error: 'the checklist found a blocker' });
    await eventually(async () => (await runOf(runId)).json.status === 'failed', 'the run failed');
    const failed = (await runOf(runId)).json;
    expect(failed.error).to.contain("approval 'gate'").and.to.contain('ended failed').and.to.contain('the checklist found a blocker');
    expect(failed.steps.map((s: Step) => `${s.nodeId}:${s.status}`)).to.deep.equal(['gate:failed']);
  });

  it('fails the run when the driver stops the live session', async () => {
    const runId = await startRun(liveGate, {});
    const sessionId = await escalate(runId);
    const stopped = await t.call('POST', `/api/public/sessions/${sessionId}/stop`, { token: admin.token });
    expect(stopped.status, stopped.text).to.equal(200);
    await eventually(async () => (await runOf(runId)).json.status === 'failed', 'the run failed');
    expect((await runOf(runId)).json.error).to.contain('ended stopped');
  });

  it('resumes the run at once and dispatches nothing when the gate does not ask for a live session', async () => {
    const before = (await t.call('GET', '/api/sessions', { token: acme.owner.token })).json.sessions.length as number;
    const runId = await startRun(plainGate, {});
    const decided = await t.call('POST', `/api/approval-gates/${await pendingGateOf(runId)}/decide`, { token: admin.token, body: { decision: 'escalated' } });
    expect(decided.status, decided.text).to.equal(200);
    expect(decided.json.gate.driver).to.equal(null);
    await eventually(async () => (await runOf(runId)).json.status === 'completed', 'the run completed');
    const done = (await runOf(runId)).json;
    expect(done.steps[0]).to.include({ nodeId: 'gate', status: 'completed', decision: 'escalated' });
    expect(done.steps[0].sessionId).to.equal(undefined);
    expect((await t.call('GET', '/api/sessions', { token: acme.owner.token })).json.sessions).to.have.length(before);
  });

  it('refuses an onEscalate other than live-session at publish, naming the field', async () => {
    const created = await t.call('POST', `/api/projects/${acme.projectId}/workflows`, {
      token: acme.owner.token, body: { name: 'bad', definitionYaml: liveGate.replace('onEscalate: live-session', 'onEscalate: phone-call') },
    });
    expect(created.status, created.text).to.equal(400);
    expect(created.json.code).to.equal('VALIDATION_FAILED');
    expect(created.json.error).to.contain('onEscalate');
  });
});
