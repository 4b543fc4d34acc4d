// Invariant (issue 34 §3): a prompt to a finished session re-dispatches it as run 2, and that follow-up goes back to
// the worker that ran it, which holds its workspace: only that worker is nudged on its event stream and offered it on
// a poll (with the agent conversation the first run reported and the session's branch), while it is live. Another
// worker of the project is offered it once that worker is no longer live (not seen within the session lease), or once
// the grace (TROUPE_FOLLOW_UP_GRACE_MS) ran out although it is live. First runs are offered to every worker as before.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { openSse, type SseClient } from '../streams/sse-client.js';
import { provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';
import { registered } from './support.js';

interface Offer { id: string; run?: number; followUp?: { agentSessionId?: string; branch: string }; repository?: { name: string }; ref?: string }

async function offersTo(t: TestNode, d: Daemon): Promise<Offer[]> {
  const res = await t.call('POST', '/api/daemon/poll', { token: d.runtimeJwt, body: { workerId: d.workerId, capacity: 100 } });
  expect(res.status, res.text).to.equal(200);
  return res.json.sessions;
}

const offered = async (t: TestNode, d: Daemon, id: string): Promise<Offer | undefined> => (await offersTo(t, d)).find((s) => s.id === id);

/** Dispatches a session on the org's repository, runs it to completion on `ranBy` (which reports its agent's conversation), and prompts it again. */
async function finishedAndPrompted(t: TestNode, org: Org, ranBy: Daemon): Promise<string> {
  const res = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Add a test', repository: 'app', ref: 'develop' } });
  expect(res.status, res.text).to.equal(201);
  const id = res.json.sessionId as string;
  for (const [status, extra] of [['claimed', {}], ['running', {}], ['finalizing', { agent: { preset: 'claude-code', agentSessionId: `conv-${id}` } }], ['completed', {}]] as const) {
    const moved = await report(t, ranBy, id, status, extra);
    expect(moved.status, `${status}: ${moved.text}`).to.equal(200);
  }
  const prompted = await t.call('POST', `/api/public/sessions/${id}/prompt`, { token: org.apiKey, body: { prompt: 'Now make it pass' } });
  expect(prompted.json).to.include({ status: 'pending' });
  return id;
}

for (const { set, skip } of engineSets) describe(`follow-ups go back to the worker that holds the workspace (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let graceNode: TestNode;
  const streams: SseClient[] = [];
  before(async () => {
    // A short lease, so a silent worker stops being live within the test; the grace stays long on this node.
    [t, graceNode] = await Promise.all([
      startTestNode({ engines: set, config: { sessionLeaseMs: 3000 } }),
      startTestNode({ engines: set, config: { followUpGraceMs: 1500 } }),
    ]);
  });
  after(async () => {
    for (const s of streams) s.close();
    await Promise.all([t?.close(), graceNode?.close()]);
  });

  async function orgWithTwoWorkers(node: TestNode, name: string) {
    const org = await provisionOrg(node, name);
    await registered(node, org, { url: 'https://git.example.test/acme/app.git' });
    const [ran, other] = await Promise.all([registerDaemon(node, org, 'ran-it'), registerDaemon(node, org, 'other')]);
    return { org, ran, other };
  }

  async function connect(node: TestNode, d: Daemon): Promise<SseClient> {
    const s = await openSse(`${node.url}/api/daemon/events`, { token: d.runtimeJwt });
    streams.push(s);
    await s.next((f) => f.event === 'ready');
    return s;
  }

  it('is offered only to the live worker that ran it, with the conversation to resume and the branch, and pushed to it alone', async () => {
    const { org, ran, other } = await orgWithTwoWorkers(t, 'Acme');
    const [ranStream, otherStream] = await Promise.all([connect(t, ran), connect(t, other)]);
    const id = await finishedAndPrompted(t, org, ran);
    await ranStream.next((f) => f.event === 'poll' && f.data.sessionId === id, 2000);
    // The signals of one change are delivered together: had the other worker been told, it would have been by now.
    const aboutFollowUp = otherStream.frames.filter((f) => JSON.stringify(f.data).includes(id) && !(f.event === 'offer' && f.data.session.run === 1));
    expect(aboutFollowUp, 'the other worker hears nothing of the follow-up').to.deep.equal([]);
    expect(otherStream.frames.some((f) => f.event === 'offer' && f.data.session.id === id), 'it was offered the first run').to.equal(true);
    expect(await offered(t, other, id), 'not offered to the other worker').to.equal(undefined);
    expect(await offered(t, ran, id)).to.deep.include({
      run: 2, ref: 'develop', followUp: { agentSessionId: `conv-${id}`, branch: `troupe/${id}` },
    });
    // Its first runs still go to everyone: a new session is offered to both.
    const fresh = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Something new' } });
    expect((await offered(t, other, fresh.json.sessionId))?.run).to.equal(1);
    expect((await offered(t, ran, fresh.json.sessionId))?.run).to.equal(1);
    // The worker that ran it claims it back.
    expect((await report(t, ran, id, 'claimed')).json).to.include({ previousStatus: 'pending', newStatus: 'claimed' });
  });

  it('is offered to another worker once the one that ran it is no longer live', async () => {
    const { org, ran, other } = await orgWithTwoWorkers(t, 'Globex');
    const id = await finishedAndPrompted(t, org, ran);
    const prompted = Date.now();
    expect(await offered(t, other, id), 'while the worker that ran it is live').to.equal(undefined);
    // `ran` says nothing more; the other worker keeps polling (which keeps it live) until it is offered the follow-up.
    let offer: Offer | undefined;
    await eventually(async () => (offer = await offered(t, other, id)) !== undefined, 'the follow-up offered to the other worker', 15_000);
    expect(Date.now() - prompted, 'not before the lease let the worker that ran it go').to.be.above(1000);
    expect(offer).to.deep.include({ run: 2, followUp: { agentSessionId: `conv-${id}`, branch: `troupe/${id}` } });
    expect((await report(t, other, id, 'claimed')).status).to.equal(200);
  });

  it('is offered to another worker after the grace, although the one that ran it is live', async () => {
    const { org, ran, other } = await orgWithTwoWorkers(graceNode, 'Initech');
    const id = await finishedAndPrompted(graceNode, org, ran);
    const prompted = Date.now();
    expect(await offered(graceNode, other, id), 'within the grace').to.equal(undefined);
    await eventually(async () => {
      await graceNode.call('POST', '/api/daemon/heartbeat', { token: ran.runtimeJwt, body: { workerId: ran.workerId } });
      return (await offered(graceNode, other, id)) !== undefined;
    }, 'the follow-up offered to the other worker after the grace', 15_000);
    expect(Date.now() - prompted).to.be.at.least(1000);
  });
});
