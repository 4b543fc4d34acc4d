// Invariant: through the real HTTP server, a session's durable status changes reach the live event stream of its
// own org (and never another org's), a client resuming with Last-Event-ID gets exactly the events it missed (or a
// reset when they are gone); interview tokens come out as ordered frames of at most 20 tokens; fleet stats count
// this org's live workers, capacity, statuses, queue and quota only; refused schemes and hostile input get 4xx.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';
import { openSse, type SseClient } from './sse-client.js';

for (const { set, skip } of engineSets) describe(`live streams and fleet stats (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  let acmeDaemon: Daemon;
  let globexDaemon: Daemon;
  const open: SseClient[] = [];
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
    acmeDaemon = await registerDaemon(t, acme);
    globexDaemon = await registerDaemon(t, globex);
  });
  afterEach(() => { for (const c of open.splice(0)) c.close(); });
  after(() => t?.close());

  const sse = async (path: string, token?: string, lastEventId?: string) => {
    const c = await openSse(`${t.url}${path}`, { ...(token ? { token } : {}), ...(lastEventId ? { lastEventId } : {}) });
    open.push(c);
    return c;
  };
  const statusOf = (id: string, status: string) => (f: { event?: string; data: any }) =>
    f.event === 'session.status' && f.data.sessionId === id && f.data.status === status;

  it('streams session status changes of the org, resumes after Last-Event-ID, and never shows another org', async () => {
    const acmeStream = await sse('/api/sessions/events', acme.apiKey);
    const globexStream = await sse('/api/sessions/events', globex.ownerToken);
    expect(acmeStream.status).to.equal(200);
    const id = await dispatch(t, acme);
    const pending = await acmeStream.next(statusOf(id, 'pending'));
    expect(pending.data).to.include({ sessionId: id, orgId: acme.orgId, projectId: acme.projectId, previousStatus: 'absent' });
    expect((await report(t, acmeDaemon, id, 'claimed')).status).to.equal(200);
    expect((await report(t, acmeDaemon, id, 'running')).status).to.equal(200);
    const running = await acmeStream.next(statusOf(id, 'running'));
    const order = acmeStream.frames.filter((f) => f.data.sessionId === id).map((f) => f.data.status);
    expect(order).to.deep.equal(['pending', 'claimed', 'running']);

    // A client that saw only "pending" resumes and gets exactly claimed, running, then live events.
    const resumed = await sse('/api/sessions/events', acme.ownerToken, pending.id);
    await resumed.next(statusOf(id, 'running'));
    expect(resumed.frames.map((f) => f.data.status)).to.deep.equal(['claimed', 'running']);
    expect(resumed.frames.at(-1)!.id).to.equal(running.id);
    expect((await t.call('POST', `/api/public/sessions/${id}/stop`, { token: acme.apiKey })).status).to.equal(200);
    await resumed.next(statusOf(id, 'stopped'));

    const forgotten = await sse('/api/sessions/events', acme.apiKey, 'no-such-event');
    await forgotten.next((f) => f.event === 'reset');

    // Globex's session shows up on Globex's stream; nothing of Acme's ever did.
    const other = await dispatch(t, globex);
    await globexStream.next(statusOf(other, 'pending'));
    expect(globexStream.frames.every((f) => f.data.orgId === globex.orgId)).to.equal(true);
    expect(acmeStream.frames.some((f) => f.data.sessionId === other)).to.equal(false);
  });

  it('refuses the session stream without an org credential or with a runtime token, and a bad query', async () => {
    expect((await sse('/api/sessions/events')).status).to.equal(401);
    expect((await sse('/api/sessions/events', 'trp_' + 'x'.repeat(40))).status).to.equal(401);
    expect((await sse('/api/sessions/events', acmeDaemon.runtimeJwt)).status).to.equal(403);
    expect((await sse('/api/sessions/events?projectId=../../x', acme.apiKey)).status).to.equal(400);
  });

  it('relays interview tokens as ordered frames of at most 20 tokens, only within the org', async () => {
    const viewer = await sse('/api/interview/iv-1/stream', acme.ownerToken);
    const foreign = await sse('/api/interview/iv-1/stream', globex.ownerToken);
    expect(viewer.status).to.equal(200);
    const tokens = Array.from({ length: 45 }, (_, i) => `t${i}`);
    const posted = await t.call('POST', '/api/interview/iv-1/deltas', { token: acmeDaemon.runtimeJwt, body: { tokens: tokens.slice(0, 30) } });
    expect(posted.status, posted.text).to.equal(202);
    expect(posted.json).to.deep.equal({ ok: true, accepted: 30 });
    await t.call('POST', '/api/interview/iv-1/deltas', { token: acmeDaemon.runtimeJwt, body: { tokens: tokens.slice(30) } });
    await viewer.next(() => viewer.frames.flatMap((f) => f.data.tokens).length === 45);
    const frames = viewer.frames.filter((f) => f.event === 'interview.delta');
    expect(frames.flatMap((f) => f.data.tokens)).to.deep.equal(tokens);
    expect(frames.every((f) => f.data.tokens.length <= 20)).to.equal(true);
    expect(frames.map((f) => f.data.seq)).to.deep.equal(frames.map((_, i) => i + 1));

    // A late viewer resumes after the first frame and gets the rest, in order.
    const late = await sse('/api/interview/iv-1/stream', acme.apiKey, frames[0]!.id);
    await late.next(() => late.frames.flatMap((f) => f.data.tokens ?? []).length === 25);
    expect(late.frames.flatMap((f) => f.data.tokens)).to.deep.equal(tokens.slice(20));

    // Globex watching an interview of the same id sees only its own worker's tokens.
    await t.call('POST', '/api/interview/iv-1/deltas', { token: globexDaemon.runtimeJwt, body: { tokens: ['globex-only'] } });
    await foreign.next((f) => f.event === 'interview.delta');
    expect(foreign.frames.flatMap((f) => f.data.tokens)).to.deep.equal(['globex-only']);
    expect(viewer.frames.flatMap((f) => f.data.tokens)).to.not.include('globex-only');
  });

  it('refuses interview deltas from non-runtime callers and hostile bodies or ids', async () => {
    const post = (token: string | undefined, id: string, body: unknown) =>
      t.call('POST', `/api/interview/${id}/deltas`, { ...(token ? { token } : {}), body });
    expect((await post(undefined, 'iv-2', { tokens: ['a'] })).status).to.equal(401);
    expect((await post(acme.apiKey, 'iv-2', { tokens: ['a'] })).status).to.equal(403);
    expect((await post(acme.ownerToken, 'iv-2', { tokens: ['a'] })).status).to.equal(403);
    for (const [id, body] of [['iv.2', { tokens: ['a'] }], ['iv-2', { tokens: [1] }], ['iv-2', { tokens: 'a' }], ['iv-2', {}],
      ['iv-2', { tokens: ['x'.repeat(5000)] }], ['iv-2', { tokens: Array(2001).fill('a') }], ['x'.repeat(65), { tokens: ['a'] }]] as const) {
      const res = await post(acmeDaemon.runtimeJwt, id, body);
      expect(res.status, `${id.slice(0, 10)} ${JSON.stringify(body).slice(0, 40)}`).to.equal(400);
    }
    expect((await sse('/api/interview/iv.2/stream', acme.apiKey)).status).to.equal(400);
    expect((await sse('/api/interview/iv-2/stream')).status).to.equal(401);
  });

  it('reports fleet statistics of the caller org only, and is not anonymous', async () => {
    const before = await t.call('GET', '/api/fleet/stats', { token: acme.apiKey });
    expect(before.status, before.text).to.equal(200);
    const extra = await registerDaemon(t, acme, 'host-stats');
    const id = await dispatch(t, acme);
    await dispatch(t, acme);
    await report(t, extra, id, 'claimed');
    const after = (await t.call('GET', '/api/fleet/stats', { token: acme.ownerToken })).json;
    expect(after.workers.live).to.equal(before.json.workers.live + 1);
    expect(after.capacity.total).to.equal(before.json.capacity.total + 4);
    expect(after.capacity.inUse).to.equal(before.json.capacity.inUse + 1);
    expect(after.sessions.byStatus.claimed).to.equal(before.json.sessions.byStatus.claimed + 1);
    expect(after.queue.depth).to.equal(before.json.queue.depth + 1);
    expect(after.quota.period).to.match(/^\d{4}-\d{2}$/);
    expect(after.quota.sessions).to.be.at.least(1); // the stopped session of the first test was accounted
    const foreign = (await t.call('GET', '/api/fleet/stats', { token: globex.apiKey })).json;
    expect(foreign.workers.registered).to.equal(1);
    expect(foreign.sessions.byStatus.claimed).to.equal(0);
    expect((await t.call('GET', '/api/fleet/stats')).status).to.equal(401);
    expect((await t.call('GET', '/api/fleet/stats', { token: t.adminToken })).status).to.equal(403);
  });
});
