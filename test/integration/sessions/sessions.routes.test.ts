// Invariant: through the edge pipeline (injected, no socket), a dispatched session moves pending → claimed → running → finalizing →
// completed only by its worker's status reports (an illegal move is 409 and changes nothing); stop and prompt behave
// as spec 3.1 says; the enriched detail shows what happened; another org's session is 404, anonymous callers 401,
// refused credential kinds 403, and hostile bodies 4xx, never 5xx.
import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, report, type Org } from './support.js';
import { eventually } from '../../support/transport.js';

for (const { set, skip } of engineSets) describe(`session routes (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
  });
  after(() => t?.close());

  it('dispatch answers 201 pending for an API key, a user token and the session cookie', async () => {
    expect(await dispatch(t, acme)).to.match(/^[0-9a-f]{16}$/);
    const byUser = await t.inject('POST', '/api/agent-dispatch', { token: acme.memberToken, body: { projectId: acme.projectId, prompt: 'x' } });
    expect(byUser.status).to.equal(201);
    expect(byUser.json.status).to.equal('pending');
    const byCookie = await t.inject('POST', '/api/agent-dispatch', {
      headers: { cookie: `troupe_session=${acme.ownerToken}`, 'sec-fetch-site': 'same-origin' }, body: { projectId: acme.projectId, prompt: 'x' },
    });
    expect(byCookie.status).to.equal(201);
  });

  it('dispatch refuses anonymous (401), a runtime token (403), another org project (404) and hostile bodies (400)', async () => {
    const daemon = await registerDaemon(t, acme);
    expect((await t.inject('POST', '/api/agent-dispatch', { body: { projectId: acme.projectId, prompt: 'x' } })).status).to.equal(401);
    expect((await t.inject('POST', '/api/agent-dispatch', { token: daemon.runtimeJwt, body: { projectId: acme.projectId, prompt: 'x' } })).status).to.equal(403);
    expect((await t.inject('POST', '/api/agent-dispatch', { token: acme.apiKey, body: { projectId: globex.projectId, prompt: 'x' } })).status).to.equal(404);
    for (const body of [{}, { projectId: 'nope', prompt: 'x' }, { projectId: acme.projectId, prompt: '' }, { projectId: acme.projectId, prompt: 'x', extra: 1 }, [], 'x']) {
      const res = await t.inject('POST', '/api/agent-dispatch', { token: acme.apiKey, body });
      expect(res.status, JSON.stringify(body)).to.equal(400);
    }
    const badJson = await t.inject('POST', '/api/agent-dispatch', { token: acme.apiKey, rawBody: '{"projectId":', headers: { 'content-type': 'application/json' } });
    expect(badJson.status).to.equal(400);
  });

  it('a session is public-id addressed by the SHA-256 of its tracker session id, as a client computes it (spec 2.7)', async () => {
    const tracker = `ENG-${randomUUID()}`;
    const id = await dispatch(t, acme, { trackerSessionId: tracker });
    expect(id).to.equal(createHash('sha256').update(tracker).digest('hex').slice(0, 16));
    expect(await dispatch(t, acme, { trackerSessionId: tracker }), 'the same tracker id again is the same session').to.equal(id);
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json).to.include({ id, trackerSessionId: tracker });
  });

  it('two orgs holding the same public id each see, stop and report only their own: no squatting, no probing (issue 16)', async () => {
    // Globex dispatches first with the tracker id Acme's Linear webhook will use for its issue.
    const acmeTracker = `linear:${acme.orgId}:${randomUUID()}`;
    const squatted = await t.inject('POST', '/api/agent-dispatch', { token: globex.apiKey, body: { projectId: globex.projectId, prompt: 'theirs', trackerSessionId: acmeTracker } });
    expect(squatted.status, 'a tracker id of its own, as far as Globex can tell').to.equal(201);
    const again = await t.inject('POST', '/api/agent-dispatch', { token: globex.apiKey, body: { projectId: globex.projectId, prompt: 'x', trackerSessionId: acmeTracker } });
    expect([again.status, again.json.sessionId]).to.deep.equal([201, squatted.json.sessionId]);
    // Acme's own dispatch of it is Acme's new session under the same public id, not a conflict and not Globex's.
    const mine = await t.inject('POST', '/api/agent-dispatch', { token: acme.apiKey, body: { projectId: acme.projectId, prompt: 'mine', trackerSessionId: acmeTracker } });
    expect(mine.status, mine.text).to.equal(201);
    const id = mine.json.sessionId as string;
    expect(id).to.equal(squatted.json.sessionId);
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey })).json).to.include({ id, prompt: 'mine', orgId: acme.orgId });
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: globex.apiKey })).json).to.include({ id, prompt: 'theirs', orgId: globex.orgId });

    // Globex's worker claims and runs its own; Acme's stays pending and is offered only to Acme's worker.
    const globexWorker = await registerDaemon(t, globex, 'globex-host');
    const acmeWorker = await registerDaemon(t, acme, 'acme-host');
    expect((await report(t, globexWorker, id, 'claimed')).json).to.deep.equal({ sessionId: id, previousStatus: 'pending', newStatus: 'claimed' });
    expect((await report(t, globexWorker, id, 'running')).status).to.equal(200);
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey })).json.status).to.equal('pending');
    const acmePoll = await t.inject('POST', '/api/daemon/poll', { token: acmeWorker.runtimeJwt, body: { workerId: acmeWorker.workerId, capacity: 50 } });
    expect(acmePoll.json.sessions.filter((s: { id: string }) => s.id === id).map((s: { prompt: string }) => s.prompt)).to.deep.equal(['mine']);

    // Globex stops its own; Acme's is untouched, and Acme's stop reaches only Acme's.
    expect((await t.inject('POST', `/api/public/sessions/${id}/stop`, { token: globex.apiKey })).json).to.include({ stopped: true, previousStatus: 'running' });
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey })).json.status).to.equal('pending');
    expect((await t.inject('POST', `/api/public/sessions/${id}/stop`, { token: acme.apiKey })).json).to.include({ stopped: true, previousStatus: 'pending' });
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: globex.apiKey })).json.status).to.equal('stopped');
    // A made-up id is 404 for both, as is a worker's report on a session of another org.
    expect((await t.inject('GET', `/api/public/sessions/${'0'.repeat(16)}`, { token: acme.apiKey })).status).to.equal(404);
    const other = await t.inject('POST', '/api/agent-dispatch', { token: globex.apiKey, body: { projectId: globex.projectId, prompt: 'only globex' } });
    expect((await report(t, acmeWorker, other.json.sessionId, 'claimed')).status).to.equal(404);
  });

  it('also answers to its key, the id sessions were given before public ids followed the spec (decision 0068)', async () => {
    const tracker = `legacy-${randomUUID()}`;
    const id = await dispatch(t, acme, { trackerSessionId: tracker });
    const key = createHash('sha256').update(`${acme.orgId}:${tracker}`).digest('hex').slice(0, 16);
    expect(key).to.not.equal(id);
    const byKey = await t.inject('GET', `/api/public/sessions/${key}`, { token: acme.apiKey });
    expect(byKey.json, 'shown under its public id whichever name was asked').to.include({ id, prompt: 'Fix ENG-1' });
    expect((await t.inject('GET', `/api/public/sessions/${key}`, { token: globex.apiKey })).status).to.equal(404);
    expect((await t.inject('POST', `/api/public/sessions/${key}/stop`, { token: acme.apiKey })).json).to.include({ stopped: true, sessionId: id });
  });

  it('walks the machine through worker reports, with 409 for an illegal move, and shows it on the detail', async () => {
    const daemon = await registerDaemon(t, acme);
    const id = await dispatch(t, acme, { trackerIssue: 'ENG-42' });
    const poll = await t.inject('POST', '/api/daemon/poll', { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, capacity: 50 } });
    expect(poll.status).to.equal(200);
    expect(poll.json.sessions.map((s: { id: string }) => s.id)).to.include(id);

    expect((await report(t, daemon, id, 'running')).status).to.equal(409);
    const claim = await report(t, daemon, id, 'claimed');
    expect(claim.json).to.deep.equal({ sessionId: id, previousStatus: 'pending', newStatus: 'claimed' });
    const other = await registerDaemon(t, acme, 'host-2');
    expect((await report(t, other, id, 'claimed')).status, 'second claimer loses').to.equal(409);
    expect((await report(t, daemon, id, 'running')).status).to.equal(200);
    expect((await report(t, daemon, id, 'completed')).status, 'running → completed skips finalizing').to.equal(409);
    expect((await report(t, daemon, id, 'finalizing', { costUsd: 0.75, phase: 'review' })).status).to.equal(200);
    const done = await report(t, daemon, id, 'completed', { costUsd: 1.25 });
    expect(done.json).to.deep.equal({ sessionId: id, previousStatus: 'finalizing', newStatus: 'completed' });

    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.status).to.equal(200);
    expect(detail.json).to.deep.include({ id, status: 'completed', costUsd: 1.25, trackerIssue: 'ENG-42', phase: 'review' });
    expect(detail.json.project).to.deep.include({ id: acme.projectId, name: 'default' });
    expect(detail.json.worker).to.deep.include({ id: daemon.workerId, hostname: 'host-1', holdsClaim: false });
    expect(detail.json.activities.map((a: { kind: string }) => a.kind)).to.deep.equal(['session.completed']);
    expect(detail.json.prompts).to.have.length(1);
    for (const key of ['createdAt', 'claimedAt', 'startedAt', 'finishedAt']) expect(detail.json[key], key).to.be.a('string');
    expect(detail.json).to.have.property('lastToolCalledAt');

    const byIssue = await t.inject('GET', '/api/sessions?trackerIssue=ENG-42', { token: acme.memberToken });
    expect(byIssue.json.sessions.map((s: { id: string }) => s.id)).to.deep.equal([id]);
    const otherOrgIssue = await t.inject('GET', '/api/sessions?trackerIssue=ENG-42', { token: globex.apiKey });
    expect(otherOrgIssue.json.sessions).to.deep.equal([]);
  });

  it('stop from a live state posts "Stop signal received"; stop again answers stopped:false', async () => {
    const id = await dispatch(t, acme);
    const first = await t.inject('POST', `/api/public/sessions/${id}/stop`, { token: acme.memberToken });
    expect(first.json).to.deep.equal({ stopped: true, sessionId: id, previousStatus: 'pending', newStatus: 'stopped' });
    const second = await t.inject('POST', `/api/public/sessions/${id}/stop`, { token: acme.apiKey });
    expect(second.status).to.equal(200);
    expect(second.json).to.deep.equal({ stopped: false, sessionId: id, previousStatus: 'stopped', newStatus: 'stopped' });
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json.activities.map((a: { body: string }) => a.body)).to.deep.equal(['Stop signal received']);
  });

  it('prompt re-dispatches a terminal session as pending and queues for a running one', async () => {
    const id = await dispatch(t, acme);
    await t.inject('POST', `/api/public/sessions/${id}/stop`, { token: acme.apiKey });
    const re = await t.inject('POST', `/api/public/sessions/${id}/prompt`, { token: acme.apiKey, body: { prompt: 'Try again' } });
    expect(re.status).to.equal(200);
    expect(re.json).to.deep.include({ delivered: true, sessionId: id, status: 'pending' });
    expect(re.json.promptId).to.be.a('string');

    const daemon = await registerDaemon(t, acme);
    await report(t, daemon, id, 'claimed');
    await report(t, daemon, id, 'running');
    const queued = await t.inject('POST', `/api/public/sessions/${id}/prompt`, { token: acme.apiKey, body: { prompt: 'Also this' } });
    expect(queued.json.status).to.equal('running');
    const poll = await t.inject('POST', '/api/daemon/poll', { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, capacity: 0 } });
    const mine = poll.json.sessions.find((s: { id: string }) => s.id === id);
    expect(mine.queuedPrompts.map((p: { text: string }) => p.text)).to.deep.equal(['Also this']);
    const again = await t.inject('POST', '/api/daemon/poll', { token: daemon.runtimeJwt, body: { workerId: daemon.workerId, capacity: 0 } });
    expect(again.json.sessions.find((s: { id: string }) => s.id === id), 'a prompt is delivered once').to.equal(undefined);
  });

  it("another org's session is 404 on every route; anonymous is 401; a viewer-less refusal is 403 for runtime tokens", async () => {
    const id = await dispatch(t, acme);
    for (const [method, path] of [
      ['GET', `/api/public/sessions/${id}`], ['POST', `/api/public/sessions/${id}/stop`], ['GET', `/api/sessions/${id}/error-issues`],
    ] as const) {
      expect((await t.inject(method, path, { token: globex.apiKey })).status, `${method} ${path}`).to.equal(404);
      expect((await t.inject(method, path)).status, `${method} ${path} anonymous`).to.equal(401);
    }
    expect((await t.inject('POST', `/api/public/sessions/${id}/prompt`, { token: globex.apiKey, body: { prompt: 'x' } })).status).to.equal(404);
    const globexDaemon = await registerDaemon(t, globex);
    expect((await report(t, globexDaemon, id, 'claimed')).status).to.equal(404);
    expect((await t.inject('GET', `/api/public/sessions/${id}`, { token: globexDaemon.runtimeJwt })).status).to.equal(403);
    expect((await t.inject('GET', '/api/public/sessions/not-a-session', { token: acme.apiKey })).status).to.equal(404);
  });

  it("a worker off the session's project, or of another org, hears 404 even for a move that would be illegal; the session stays as it was", async () => {
    const id = await dispatch(t, acme);
    const d = await registerDaemon(t, acme, 'host-narrowed');
    const removal = await t.inject('POST', '/api/daemon/mutations', {
      token: acme.ownerToken, body: { workerHostId: d.workerId, op: 'project.remove', params: { projectId: acme.projectId } },
    });
    expect(removal.status, removal.text).to.equal(201);
    const beat = await t.inject('POST', '/api/daemon/heartbeat', { token: d.runtimeJwt, body: { workerId: d.workerId } });
    expect(beat.json.runtimeJwt, 'a narrowed token comes with the delivered removal').to.be.a('string');
    const narrowed = { workerId: d.workerId, runtimeJwt: beat.json.runtimeJwt as string };
    const globexDaemon = await registerDaemon(t, globex);
    // `claimed` is a legal move from pending, `completed` an illegal one: neither answer may tell the session exists.
    for (const outsider of [narrowed, globexDaemon]) {
      for (const status of ['claimed', 'completed']) expect((await report(t, outsider, id, status)).status, status).to.equal(404);
    }
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json.status).to.equal('pending');
    expect((await report(t, await registerDaemon(t, acme, 'host-2'), id, 'claimed')).status).to.equal(200);
  });

  it("a project removal holds at once for the worker's current token, before the worker takes it; a cancelled one gives it back (issue 30)", async () => {
    const id = await dispatch(t, acme);
    const d = await registerDaemon(t, acme, 'host-removed');
    const removal = await t.inject('POST', '/api/daemon/mutations', {
      token: acme.ownerToken, body: { workerHostId: d.workerId, op: 'project.remove', params: { projectId: acme.projectId } },
    });
    expect(removal.status, removal.text).to.equal(201);
    // The token it holds still names the project; no heartbeat has delivered the removal.
    expect((await report(t, d, id, 'claimed')).status).to.equal(404);
    const cancelled = await t.inject('POST', `/api/daemon/mutations/${removal.json.mutation.id}/cancel`, { token: acme.ownerToken });
    expect(cancelled.status, cancelled.text).to.equal(200);
    await eventually(async () => (await report(t, d, id, 'claimed')).status === 200, 'the cancelled removal gave the project back');
  });

  it('error-issues answers configured:false without a connection', async () => {
    const id = await dispatch(t, acme);
    const res = await t.inject('GET', `/api/sessions/${id}/error-issues`, { token: acme.apiKey });
    expect(res.json).to.deep.equal({ configured: false, issues: [] });
  });

  it('a status report must come from the worker its token names, with a well-formed body', async () => {
    const daemon = await registerDaemon(t, acme);
    const id = await dispatch(t, acme);
    const spoofed = await t.inject('POST', `/api/sessions/${id}/status`, { token: daemon.runtimeJwt, body: { status: 'claimed', workerId: 'someone-else' } });
    expect(spoofed.status).to.equal(403);
    expect((await t.inject('POST', `/api/sessions/${id}/status`, { token: acme.apiKey, body: { status: 'claimed', workerId: daemon.workerId } })).status).to.equal(403);
    for (const body of [{ status: 'exploded', workerId: daemon.workerId }, { status: 'claimed', workerId: daemon.workerId, costUsd: -5 }, { status: 'claimed' }]) {
      expect((await t.inject('POST', `/api/sessions/${id}/status`, { token: daemon.runtimeJwt, body })).status).to.equal(400);
    }
  });
});
