// Invariant (spec 3.3, 9.4): a run stays on the version published when it started. A run paused at an approval
// gate, one waiting on a timed step and one running an agent step each meet a publish of a new version with other
// nodes, and each finishes the rest of its own version's plan under its own version number, while a run started
// after the publish walks the new version.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';

const v1 = {
  paused: 'nodes:\n  - {id: ask, kind: approval, title: "Go on?"}\n  - {id: v1-after-ask, kind: wait, seconds: 0}\nedges:\n  - {source: ask, target: v1-after-ask}\n',
  waiting: 'nodes:\n  - {id: pause, kind: wait, seconds: 5}\n  - {id: v1-after-pause, kind: wait, seconds: 0}\nedges:\n  - {source: pause, target: v1-after-pause}\n',
  agent: 'nodes:\n  - {id: work, kind: agent, prompt: "Do the v1 work"}\n  - {id: v1-after-work, kind: wait, seconds: 0}\nedges:\n  - {source: work, target: v1-after-work}\n',
};
const v2Nodes = 'nodes:\n  - {id: v2-only, kind: wait, seconds: 0}\nedges: []\n';
const definition = (name: string, body: string) => `schemaVersion: v2\nname: ${name}\ntrigger: {type: manual}\n${body}`;

type Run = { runId: string; version: number; status: string; steps: Array<{ nodeId: string; status: string; sessionId?: string }> };

for (const { set, skip } of engineSets) describe(`workflow runs: paused, waiting and agent runs stay on their version through a publish (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let org: Org;
  let daemon: Daemon;

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t, 'Pinned');
    daemon = await registerDaemon(t, org);
  });
  after(async () => { await t?.close(); });

  const api = (method: string, path: string, body?: unknown) => t.call(method, path, { token: org.ownerToken, ...(body === undefined ? {} : { body }) });
  const runOf = async (runId: string): Promise<Run> => (await api('GET', `/api/workflow-runs/${runId}`)).json;

  async function publishedWithRun(name: string, body: string): Promise<{ workflowId: string; runId: string }> {
    const created = await api('POST', `/api/projects/${org.projectId}/workflows`, { name, definitionYaml: definition(name, body) });
    expect(created.status, created.text).to.equal(201);
    expect((await api('PATCH', `/api/workflows/${created.json.id}`, { status: 'published' })).json.publishedVersion).to.equal(2);
    const started = await api('POST', `/api/workflows/${created.json.id}/runs`, {});
    expect(started.status, started.text).to.equal(201);
    expect(started.json.version).to.equal(2);
    return { workflowId: created.json.id, runId: started.json.runId };
  }

  async function finishSession(sessionId: string): Promise<void> {
    await eventually(async () => {
      const poll = await t.call('POST', '/api/daemon/poll', { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, capacity: 10 } });
      return (poll.json?.sessions ?? []).some((s: { id: string }) => s.id === sessionId);
    }, `the daemon is offered session ${sessionId}`);
    for (const status of ['claimed', 'running', 'finalizing', 'completed']) {
      const res = await report(t, daemon, sessionId, status);
      expect(res.status, `${status}: ${res.text}`).to.equal(200);
    }
  }

  it('finishes each on the version it started on, and starts new runs on the new one', async () => {
    const paused = await publishedWithRun('paused', v1.paused);
    const waiting = await publishedWithRun('waiting', v1.waiting);
    const agent = await publishedWithRun('agent', v1.agent);
    expect((await runOf(paused.runId)).status).to.equal('suspended');
    expect((await runOf(waiting.runId)).status).to.equal('waiting');
    const working = await runOf(agent.runId);
    expect(working.status).to.equal('running');
    const sessionId = working.steps[0]!.sessionId!;

    for (const { workflowId } of [paused, waiting, agent]) {
      const republished = await api('PATCH', `/api/workflows/${workflowId}`, { definitionYaml: definition('v2', v2Nodes), changeReason: 'replace the plan' });
      expect(republished.json, republished.text).to.include({ status: 'published', version: 3, publishedVersion: 3 });
    }
    // Each run met the publish in flight.
    expect((await runOf(paused.runId))).to.include({ status: 'suspended', version: 2 });
    expect((await runOf(waiting.runId))).to.include({ status: 'waiting', version: 2 });
    expect((await runOf(agent.runId))).to.include({ status: 'running', version: 2 });

    let gateId: string | undefined;
    await eventually(async () => {
      const gates = (await api('GET', '/api/approval-gates?status=pending')).json.gates as Array<{ id: string; runId: string | null }>;
      gateId = gates.find((g) => g.runId === paused.runId)?.id;
      return gateId !== undefined;
    }, 'the paused run\'s gate');
    expect((await api('POST', `/api/approval-gates/${gateId}/decide`, { decision: 'approved' })).status).to.equal(200);
    await finishSession(sessionId);

    const expected: Array<[string, string[]]> = [
      [paused.runId, ['ask', 'v1-after-ask']], [waiting.runId, ['pause', 'v1-after-pause']], [agent.runId, ['work', 'v1-after-work']],
    ];
    for (const [runId, steps] of expected) {
      await eventually(async () => (await runOf(runId)).status === 'completed', `run ${runId} completed`, 20_000);
      const done = await runOf(runId);
      expect(done.version).to.equal(2);
      expect(done.steps.map((s) => s.nodeId)).to.deep.equal(steps);
    }

    const fresh = await api('POST', `/api/workflows/${agent.workflowId}/runs`, {});
    expect(fresh.json.version).to.equal(3);
    await eventually(async () => (await runOf(fresh.json.runId)).status === 'completed', 'a new run on version 3');
    expect((await runOf(fresh.json.runId)).steps.map((s) => s.nodeId)).to.deep.equal(['v2-only']);
  });
});
