// Invariant: a connected worker hears of new work of its projects, of a stop of a session it holds, of a prompt
// queued for it and of a mutation waiting for it on `GET /api/daemon/events`, within a fraction of a second and
// never for another org or another project; the output it relays for a session it holds is kept (the last 64 KiB of
// the run) in the session's detail and streamed on the session's interview stream; a worker that no longer holds a
// session gets 409 and another org's worker 404; `GET /api/daemon/sessions` lists exactly what the worker holds.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { openSse, type SseClient } from '../streams/sse-client.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';

for (const { set, skip } of engineSets) describe(`worker protocol routes (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  const streams: SseClient[] = [];
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
  });
  after(async () => {
    for (const s of streams) s.close();
    await t?.close();
  });

  async function connect(d: Daemon): Promise<SseClient> {
    const s = await openSse(`${t.url}/api/daemon/events`, { token: d.runtimeJwt });
    streams.push(s);
    expect(s.status).to.equal(200);
    await s.next((f) => f.event === 'ready');
    return s;
  }

  it('refuses the stream without a runtime token', async () => {
    expect((await openSse(`${t.url}/api/daemon/events`)).status).to.equal(401);
    expect((await openSse(`${t.url}/api/daemon/events`, { token: acme.apiKey })).status).to.equal(403);
  });

  it('pushes an offer of new work to the workers of its project only, and a stop to the worker that holds it', async () => {
    const d = await registerDaemon(t, acme);
    const foreign = await registerDaemon(t, globex);
    const s = await connect(d);
    const f = await connect(foreign);
    const sent = Date.now();
    const id = await dispatch(t, acme, { workType: 'fix' });
    const offer = await s.next((e) => e.event === 'offer' && e.data.session.id === id, 2000);
    expect(Date.now() - sent).to.be.below(1000);
    expect(offer.data.session).to.deep.include({ id, projectId: acme.projectId, prompt: 'Fix ENG-1', workType: 'fix' });
    expect((await report(t, d, id, 'claimed')).status).to.equal(200);
    expect((await report(t, d, id, 'running')).status).to.equal(200);
    const stop = await t.inject('POST', `/api/public/sessions/${id}/stop`, { token: acme.apiKey });
    expect(stop.json).to.include({ stopped: true, newStatus: 'stopped' });
    const stopped = await s.next((e) => e.event === 'stop' && e.data.sessionId === id, 2000);
    expect(stopped.data).to.include({ status: 'stopped', reason: 'stopped' });
    expect(f.frames.filter((e) => e.event !== 'ready'), 'another org hears nothing').to.deep.equal([]);
  });

  it('nudges the holder to poll when a prompt is queued, and a worker to heartbeat when a mutation waits', async () => {
    const d = await registerDaemon(t, acme);
    const s = await connect(d);
    const id = await dispatch(t, acme);
    await report(t, d, id, 'claimed');
    await report(t, d, id, 'running');
    expect((await t.inject('POST', `/api/public/sessions/${id}/prompt`, { token: acme.apiKey, body: { prompt: 'and the tests' } })).status).to.equal(200);
    await s.next((e) => e.event === 'poll' && e.data.sessionId === id, 2000);
    const poll = await t.inject('POST', '/api/daemon/poll', { token: d.runtimeJwt, body: { workerId: d.workerId, capacity: 0 } });
    expect(poll.json.sessions[0].queuedPrompts.map((p: { text: string }) => p.text)).to.deep.equal(['and the tests']);
    const queued = await t.inject('POST', '/api/daemon/mutations', { token: acme.ownerToken, body: { workerHostId: d.workerId, op: 'pool.deleted', params: { poolId: 'gpu' } } });
    expect(queued.status, queued.text).to.equal(201);
    const nudge = await s.next((e) => e.event === 'mutation', 2000);
    expect(nudge.data.pending).to.equal(1);
  });

  it('a session with a tracker issue is announced as a poll nudge (the issue lock decides), not offered', async () => {
    const d = await registerDaemon(t, acme);
    const s = await connect(d);
    const id = await dispatch(t, acme, { trackerIssue: 'ENG-7' });
    await s.next((e) => e.event === 'poll' && e.data.projectId === acme.projectId, 2000);
    expect(s.frames.some((e) => e.event === 'offer' && e.data.session.id === id)).to.equal(false);
  });

  it('keeps the last 64 KiB of output with the session, streams it live, and refuses workers that do not hold it', async () => {
    const d = await registerDaemon(t, acme);
    const other = await registerDaemon(t, acme, 'host-2');
    const foreign = await registerDaemon(t, globex);
    const id = await dispatch(t, acme);
    const viewer = await openSse(`${t.url}/api/interview/${id}/stream`, { token: acme.apiKey });
    streams.push(viewer);
    await report(t, d, id, 'claimed');
    const post = (w: Daemon, chunks: string[]) => t.inject('POST', `/api/sessions/${id}/output`, { token: w.runtimeJwt, body: { workerId: w.workerId, chunks } });
    const first = await post(d, ['hello\n', 'wörld\n']);
    expect(first.status, first.text).to.equal(202);
    expect(first.json).to.include({ accepted: 2, totalBytes: 13, keptBytes: 13 });
    const frame = await viewer.next((e) => e.event === 'interview.delta', 2000);
    expect(frame.data.tokens).to.deep.equal(['hello\n', 'wörld\n']);
    expect((await post(other, ['not mine\n'])).status, 'another worker of the org').to.equal(409);
    expect((await post(foreign, ['x\n'])).status, 'another org').to.equal(404);
    expect((await t.inject('POST', `/api/sessions/${id}/output`, { token: d.runtimeJwt, body: { workerId: other.workerId, chunks: ['x'] } })).status).to.equal(403);
    expect((await t.inject('POST', `/api/sessions/${id}/output`, { token: d.runtimeJwt, body: { workerId: d.workerId, chunks: [] } })).status).to.equal(400);
    const line = `${'é'.repeat(999)}\n`; // 1,999 bytes
    for (let i = 0; i < 4; i++) expect((await post(d, Array.from({ length: 10 }, () => line))).status).to.equal(202);
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json.output.totalBytes).to.equal(13 + 40 * 1999);
    expect(detail.json.output.truncated).to.equal(true);
    expect(Buffer.byteLength(detail.json.output.tail)).to.be.at.most(64 * 1024).and.above(64 * 1024 - 4);
    expect(detail.json.output.tail.endsWith(line)).to.equal(true);
    expect(detail.json.output.tail.includes('\uFFFD')).to.equal(false);
    const held = await t.inject('GET', '/api/daemon/sessions', { token: d.runtimeJwt });
    expect(held.json.sessions).to.deep.include({ id, status: 'claimed', run: 1 });
    expect((await t.inject('GET', '/api/daemon/sessions', { token: other.runtimeJwt })).json.sessions).to.deep.equal([]);
    await t.inject('POST', `/api/public/sessions/${id}/stop`, { token: acme.apiKey });
    expect((await post(d, ['late\n'])).status, 'no longer held').to.equal(409);
    expect((await t.inject('GET', '/api/daemon/sessions', { token: d.runtimeJwt })).json.sessions).to.deep.equal([]);
    const otherOrg = await t.inject('GET', `/api/public/sessions/${id}`, { token: globex.apiKey });
    expect(otherOrg.status).to.equal(404);
  });
});
