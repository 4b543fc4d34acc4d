// Invariant: a paused worker is offered nothing — its polls answer no pending session and pushed offers skip it while
// another worker of the project still gets them — yet the sessions it holds run on and their queued prompts still
// reach it; resuming sends it a `poll` and its next poll offers what waits. The worker listing and the fleet
// statistics show the pause. A drain is a `worker.drain` mutation the worker is nudged to fetch, answered 202, the same
// one while undelivered; the operator mutation route cannot enqueue it. Pause, resume and drain are idempotent, audited
// once per change, allowed to org admins and owners and admin keys, refused (403) to members, viewers, project admins
// and read keys, and 404 for another org's worker or an id naming none, changing nothing.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import type { SseClient } from '../streams/sse-client.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';
import { auditOf, connect, expectRefused, heardWithin, people, polled, type People } from './support.js';

for (const { set, skip } of engineSets) describe(`worker pause, resume and drain (${set} engines)`, function () {
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

  const control = (d: Daemon | string, action: 'pause' | 'resume' | 'drain', token = acme.ownerToken) =>
    t.call('POST', `/api/workers/${encodeURIComponent(typeof d === 'string' ? d : d.workerId)}/${action}`, { token });
  const listed = async (d: Daemon, org = acme) => {
    const res = await t.call('GET', '/api/fleet/workers', { token: org.ownerToken });
    expect(res.status, res.text).to.equal(200);
    return (res.json.workers as Array<{ id: string; paused: boolean; pausedAt: string | null; pausedBy: string | null }>).find((w) => w.id === d.workerId);
  };

  it('offers a paused worker nothing while another takes the work, lets what it holds run on, and offers again on resume', async () => {
    const [paused, other] = await Promise.all([registerDaemon(t, acme, 'host-paused'), registerDaemon(t, acme, 'host-other')]);
    const [ps, os] = [await connect(t, paused, streams), await connect(t, other, streams)];
    const held = await dispatch(t, acme);
    expect((await report(t, paused, held, 'claimed')).status).to.equal(200);

    const res = await control(paused, 'pause');
    expect(res.status, res.text).to.equal(200);
    expect(res.json).to.include({ workerId: paused.workerId, paused: true });
    expect(res.json.pausedBy).to.match(/^user:/);
    expect(await listed(paused)).to.deep.include({ paused: true, pausedAt: res.json.pausedAt, pausedBy: res.json.pausedBy });
    expect(await listed(other)).to.deep.include({ paused: false, pausedAt: null, pausedBy: null });
    expect((await t.call('GET', '/api/fleet/stats', { token: acme.apiKey })).json.workers.paused).to.equal(1);

    const waiting = await dispatch(t, acme);
    await os.next((f) => f.event === 'offer' && f.data.session.id === waiting, 2_000);
    expect(await heardWithin(ps, (f) => f.event === 'offer' && f.data.session.id === waiting, 500), 'offer pushed to the paused worker').to.equal(false);
    expect(await polled(t, paused)).to.deep.equal([]);
    expect(await polled(t, other)).to.include(waiting);
    // The held session runs on, and a prompt queued for it still reaches the paused worker.
    expect((await report(t, paused, held, 'running')).status).to.equal(200);
    expect((await t.call('POST', `/api/public/sessions/${held}/prompt`, { token: acme.apiKey, body: { prompt: 'and the docs' } })).status).to.equal(200);
    const poll = await t.inject('POST', '/api/daemon/poll', { token: paused.runtimeJwt, body: { workerId: paused.workerId, capacity: 4 } });
    expect(poll.json.sessions.map((s: { id: string; queuedPrompts?: unknown[] }) => [s.id, s.queuedPrompts?.length])).to.deep.equal([[held, 1]]);

    const resumed = await control(paused, 'resume');
    expect(resumed.json).to.deep.equal({ workerId: paused.workerId, paused: false, pausedAt: null, pausedBy: null });
    await ps.next((f) => f.event === 'poll' && f.data.projectId === undefined && f.data.sessionId === undefined, 2_000);
    expect(await polled(t, paused)).to.include(waiting);
    const next = await dispatch(t, acme);
    await ps.next((f) => f.event === 'offer' && f.data.session.id === next, 2_000);
    expect((await listed(paused))?.paused).to.equal(false);
    for (const id of [waiting, next]) await report(t, other, id, 'claimed');
  });

  it('drains by a worker.drain mutation it is nudged to fetch, the same one until delivered, and only through its route', async () => {
    const d = await registerDaemon(t, acme, 'host-drain');
    const s = await connect(t, d, streams);
    const first = await control(d, 'drain');
    expect(first.status, first.text).to.equal(202);
    expect(first.json.workerId).to.equal(d.workerId);
    expect(first.json.mutation).to.include({ op: 'worker.drain', status: 'pending', workerHostId: d.workerId });
    expect(first.json.mutation.params).to.deep.equal({});
    await s.next((f) => f.event === 'mutation', 2_000);
    const again = await control(d, 'drain', acme.apiKey);
    expect([again.status, again.json.mutation.id]).to.deep.equal([202, first.json.mutation.id]);

    const beat = await t.inject('POST', '/api/daemon/heartbeat', { token: d.runtimeJwt, body: { workerId: d.workerId } });
    expect(beat.json.mutations.map((m: { id: string; op: string }) => [m.id, m.op])).to.deep.equal([[first.json.mutation.id, 'worker.drain']]);
    const later = await control(d, 'drain');
    expect(later.json.mutation.id, 'a new drain once the first was delivered').to.not.equal(first.json.mutation.id);

    const direct = await t.call('POST', '/api/daemon/mutations', { token: acme.ownerToken, body: { workerHostId: d.workerId, op: 'worker.drain', params: {} } });
    expectRefused(direct, 400, 'VALIDATION_FAILED', 'worker.drain through the operator queue');
    const entries = await auditOf(t, acme, ['worker.drain_requested']);
    expect(entries.filter((e) => e.subject === d.workerId).map((e) => e.payload.mutationId)).to.deep.equal([first.json.mutation.id, later.json.mutation.id]);
  });

  it('is idempotent and audits each change once', async () => {
    const d = await registerDaemon(t, acme, 'host-twice');
    const first = await control(d, 'pause');
    expect((await control(d, 'pause', acme.apiKey)).json).to.deep.equal(first.json);
    expect((await control(d, 'resume')).json.paused).to.equal(false);
    expect((await control(d, 'resume', acme.apiKey)).json.paused).to.equal(false);
    const entries = (await auditOf(t, acme, ['worker.paused', 'worker.resumed'])).filter((e) => e.subject === d.workerId);
    expect(entries.map((e) => [e.type, e.actor.split(':')[0]])).to.deep.equal([['worker.paused', 'user'], ['worker.resumed', 'user']]);
  });

  it('is allowed to org admins, owners and admin keys; refused to members, viewers, project admins and read keys', async () => {
    const d = await registerDaemon(t, acme, 'host-roles');
    const refused: Array<[string, string]> = [
      ['member', acme.memberToken], ['org viewer', who.orgViewer], ['project admin', who.projectAdmin], ['project editor', who.projectEditor], ['read key', who.readKey],
    ];
    for (const [what, token] of refused) {
      for (const action of ['pause', 'resume', 'drain'] as const) expectRefused(await control(d, action, token), 403, 'AUTHZ_DENIED', `${what} ${action}`);
    }
    expect((await listed(d))?.paused, 'nothing changed').to.equal(false);
    const history = await t.call('GET', `/api/daemon/mutations?workerHostId=${d.workerId}`, { token: acme.ownerToken });
    expect(history.json.mutations, 'no drain was enqueued').to.deep.equal([]);
    for (const [what, token] of [['org admin', who.orgAdmin], ['admin key', acme.apiKey]] as const) {
      expect((await control(d, 'pause', token)).json.paused, what).to.equal(true);
      expect((await control(d, 'resume', token)).json.paused, what).to.equal(false);
    }
  });

  it("is 404 for another org's worker and for ids naming no worker, and changes nothing", async () => {
    const theirs = await registerDaemon(t, globex, 'host-globex');
    for (const action of ['pause', 'resume', 'drain'] as const) expectRefused(await control(theirs, action), 404, 'NOT_FOUND', `globex ${action}`);
    expect((await listed(theirs, globex))?.paused).to.equal(false);
    expect((await t.call('GET', `/api/daemon/mutations?workerHostId=${theirs.workerId}`, { token: globex.ownerToken })).json.mutations).to.deep.equal([]);
    for (const id of ['not-a-uuid', '00000000-0000-4000-8000-000000000000', theirs.workerId.toUpperCase(), `${theirs.workerId}x`, 'x'.repeat(300)]) {
      expectRefused(await control(id, 'pause'), 404, 'NOT_FOUND', id);
    }
    expect((await control(theirs, 'pause', '')).status).to.equal(401);
  });
});
