// Invariant: a workflow run's agent step is finished by its session. A daemon registers, polls, claims, runs,
// finalizes and completes the session the run dispatched; the run then proceeds to its next step and finishes. A
// failed session fails the run. The session detail names the run and the workflow version it runs under.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';

const twoAgents = `schemaVersion: v2
name: plan-then-ship
trigger: {type: manual}
nodes:
  - {id: plan, kind: agent, prompt: "Plan the fix"}
  - {id: ship, kind: agent, prompt: "Ship it"}
edges:
  - {source: plan, target: ship}
`;

for (const { set, skip } of engineSets) describe(`glue: a session reports its terminal status to the workflow run that dispatched it (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let daemon: Daemon;
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    daemon = await registerDaemon(t, acme);
  });
  after(() => t?.close());

  const runOf = async (runId: string) => (await t.inject('GET', `/api/workflow-runs/${runId}`, { token: acme.ownerToken })).json;

  /** The session the run currently waits on, once a poll offers it to the daemon. */
  async function offeredSession(runId: string): Promise<string> {
    let sessionId: string | undefined;
    await eventually(async () => {
      const waiting = (await runOf(runId)).steps.at(-1)?.sessionId as string | undefined;
      const poll = await t.inject('POST', '/api/daemon/poll', { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, capacity: 10 } });
      sessionId = poll.json.sessions.map((s: { id: string }) => s.id).find((id: string) => id === waiting);
      return sessionId !== undefined;
    }, `the daemon is offered the session of run ${runId}`);
    return sessionId!;
  }

  async function startRun(): Promise<{ runId: string; version: number; workflowId: string }> {
    const created = await t.inject('POST', `/api/projects/${acme.projectId}/workflows`, { token: acme.ownerToken, body: { name: 'ship', definitionYaml: twoAgents } });
    expect(created.status, created.text).to.equal(201);
    const published = await t.inject('PATCH', `/api/workflows/${created.json.id}`, { token: acme.ownerToken, body: { status: 'published' } });
    expect(published.status, published.text).to.equal(200);
    const started = await t.inject('POST', `/api/workflows/${created.json.id}/runs`, { token: acme.ownerToken, body: {} });
    expect(started.status, started.text).to.equal(201);
    return { runId: started.json.runId, version: started.json.version, workflowId: created.json.id };
  }

  async function work(sessionId: string, outcome: 'completed' | 'failed', extra: Record<string, unknown> = {}) {
    for (const status of ['claimed', 'running', 'finalizing', outcome]) {
      const res = await report(t, daemon, sessionId, status, status === outcome ? extra : {});
      expect(res.status, `${status}: ${res.text}`).to.equal(200);
    }
  }

  it('moves the run to its next agent step when the session completes, and finishes it after the last', async () => {
    const { runId, version, workflowId } = await startRun();
    const plan = await offeredSession(runId);
    const detail = await t.inject('GET', `/api/public/sessions/${plan}`, { token: acme.ownerToken });
    expect(detail.status, detail.text).to.equal(200);
    expect(detail.json.workflowRun).to.deep.equal({ runId, workflowId, version });
    expect((await runOf(runId)).status).to.equal('running');

    await work(plan, 'completed', { costUsd: 0.5 });
    await eventually(async () => (await runOf(runId)).steps.length === 2, 'the run reached its second step');
    const midway = await runOf(runId);
    expect(midway.steps[0]).to.include({ nodeId: 'plan', status: 'completed', sessionId: plan });
    expect(midway.steps[1]).to.include({ nodeId: 'ship', status: 'running' });

    const ship = await offeredSession(runId);
    expect(ship).to.not.equal(plan);
    await work(ship, 'completed');
    await eventually(async () => (await runOf(runId)).status === 'completed', 'the run completed');
    const done = await runOf(runId);
    expect(done.steps.map((s: { nodeId: string; status: string }) => `${s.nodeId}:${s.status}`)).to.deep.equal(['plan:completed', 'ship:completed']);
    expect(done.version).to.equal(version);
  });

  it('fails the run with the reason when its session fails', async () => {
    const { runId } = await startRun();
    const plan = await offeredSession(runId);
    await work(plan, 'failed', { error: 'tests are red' });
    await eventually(async () => (await runOf(runId)).status === 'failed', 'the run failed');
    const failed = await runOf(runId);
    expect(failed.error).to.contain("agent step 'plan' ended failed").and.to.contain('tests are red');
    expect(failed.steps).to.have.length(1);
  });

  it('fails the run when an operator stops its session', async () => {
    const { runId } = await startRun();
    const plan = await offeredSession(runId);
    const stopped = await t.inject('POST', `/api/public/sessions/${plan}/stop`, { token: acme.ownerToken });
    expect(stopped.json).to.include({ stopped: true, newStatus: 'stopped' });
    await eventually(async () => (await runOf(runId)).status === 'failed', 'the run failed');
    expect((await runOf(runId)).error).to.contain('ended stopped');
  });

  it('a session dispatched by hand names no workflow run', async () => {
    const res = await t.inject('POST', '/api/agent-dispatch', { token: acme.apiKey, body: { projectId: acme.projectId, prompt: 'by hand' } });
    const detail = await t.inject('GET', `/api/public/sessions/${res.json.sessionId}`, { token: acme.ownerToken });
    expect(detail.json.workflowRun).to.equal(null);
  });
});
