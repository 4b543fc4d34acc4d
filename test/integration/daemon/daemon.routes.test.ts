// Invariant: through the node's HTTP edge (injected, no socket), a daemon registers only with a live registration token; a mutation
// enqueued by an org admin or owner is delivered on exactly one heartbeat, stamped deliveredAt before that answer;
// cancel wins only while undelivered (a cancel racing a heartbeat has exactly one winner); another org's hosts and
// mutations are 404; the step heartbeat never answers 5xx; and a silent worker's sessions are reclaimed.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { signToken } from '../../../actors/services/identity/tokens.js';
import { daemonServices } from '../../../actors/services/daemon/services.js';
import { dispatch, provisionOrg, registerDaemon, report, type Daemon, type Org } from '../sessions/support.js';

for (const { set, skip } of engineSets) describe(`daemon routes (${set} engines)`, function () {
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

  const heartbeat = (d: Daemon, token = d.runtimeJwt) =>
    t.inject('POST', '/api/daemon/heartbeat', { token, body: { workerId: d.workerId, activeSessionIds: [], load: 0.5 } });
  const enqueue = (token: string, workerHostId: string, op = 'pool.deleted', params: Record<string, unknown> = { poolId: 'gpu-a' }) =>
    t.inject('POST', '/api/daemon/mutations', { token, body: { workerHostId, op, params } });

  it('registers with a registration token in the body and refuses bad or revoked tokens with 401', async () => {
    const d = await registerDaemon(t, acme);
    expect(d.workerId).to.match(/^[0-9a-f-]{36}$/);
    const res = await t.inject('POST', '/v1/daemon/register', { body: { registrationToken: acme.registrationToken, hostname: 'h', maxAgents: 1 } });
    expect(res.json).to.include({ heartbeatIntervalSeconds: 15, pollIntervalSeconds: 5 });
    for (const registrationToken of ['trg_' + 'A'.repeat(40), 'nonsense', acme.apiKey]) {
      expect((await t.inject('POST', '/v1/daemon/register', { body: { registrationToken, hostname: 'h', maxAgents: 1 } })).status).to.equal(401);
    }
    expect((await t.inject('POST', '/v1/daemon/register', { body: { hostname: 'h', maxAgents: 1 } })).status).to.equal(400);
    const revoked = await t.inject('DELETE', `/api/org/${acme.orgId}/registration-tokens/${acme.registrationTokenId}`, { token: acme.ownerToken });
    expect(revoked.status, revoked.text).to.be.oneOf([200, 204]);
    expect((await t.inject('POST', '/v1/daemon/register', { body: { registrationToken: acme.registrationToken, hostname: 'h', maxAgents: 1 } })).status).to.equal(401);
    const fresh = await t.inject('POST', `/api/org/${acme.orgId}/registration-tokens`, { token: acme.ownerToken, body: { name: 'next' } });
    expect(fresh.status, fresh.text).to.equal(201);
    acme = { ...acme, registrationToken: fresh.json.registrationToken, registrationTokenId: fresh.json.id };
  });

  it('delivers an enqueued mutation on exactly one heartbeat, with deliveredAt stamped durably first', async () => {
    const d = await registerDaemon(t, acme);
    expect((await heartbeat(d)).json).to.deep.equal({ ok: true, mutations: [] });
    const queued = await enqueue(acme.ownerToken, d.workerId, 'modelAccess.set', { allow: ['claude-sonnet'], reason: 'cost' });
    expect(queued.status, queued.text).to.equal(201);
    expect(queued.json.mutation).to.deep.include({ status: 'pending', op: 'modelAccess.set', workerHostId: d.workerId, orgId: acme.orgId });
    expect(queued.json.mutation).to.not.have.property('deliveredAt');
    const first = await heartbeat(d);
    expect(first.json.mutations).to.have.length(1);
    expect(first.json.mutations[0]).to.deep.include({ id: queued.json.mutation.id, status: 'delivered' });
    const row = await t.node.deps.db('daemon_mutations').where({ id: queued.json.mutation.id }).first();
    expect(row.delivered_at, 'durable before the answer').to.not.equal(null);
    expect((await heartbeat(d)).json.mutations).to.deep.equal([]);
    const history = await t.inject('GET', `/api/daemon/mutations?workerHostId=${d.workerId}`, { token: acme.apiKey });
    expect(history.json.mutations[0]).to.include({ id: queued.json.mutation.id, status: 'delivered' });
    expect(history.json.mutations[0].deliveredAt).to.be.a('string');
  });

  it('project.remove changes the allowlist and the heartbeat hands over a refreshed runtime JWT', async () => {
    const d = await registerDaemon(t, acme);
    const id = await dispatch(t, acme);
    const removed = await enqueue(acme.ownerToken, d.workerId, 'project.remove', { projectId: acme.projectId });
    expect(removed.status).to.equal(201);
    const hb = await heartbeat(d);
    expect(hb.json.runtimeJwt).to.be.a('string');
    expect((await heartbeat(d, hb.json.runtimeJwt)).status).to.equal(200);
    const poll = await t.inject('POST', '/api/daemon/poll', { token: hb.json.runtimeJwt, body: { workerId: d.workerId, capacity: 100 } });
    expect(poll.json.sessions.map((s: { id: string }) => s.id), 'no longer offered its old project').to.not.include(id);
    expect((await enqueue(acme.ownerToken, d.workerId, 'project.add', { projectId: acme.projectId })).status).to.equal(201);
    expect((await heartbeat(d, hb.json.runtimeJwt)).json.runtimeJwt).to.be.a('string');
    expect((await enqueue(acme.ownerToken, d.workerId, 'project.add', { projectId: globex.projectId })).status).to.equal(404);
  });

  it('refreshes the runtime JWT in the heartbeat reply when under five minutes remain', async () => {
    const d = await registerDaemon(t, acme);
    const { token: expiring } = await signToken(daemonServices(t.node.deps).keys, t.node.deps.clock, 'runtime', {
      wid: d.workerId, org: acme.orgId, prj: [acme.projectId], reg: acme.registrationTokenId, scope: ['daemon'],
    }, 120);
    const res = await heartbeat(d, expiring);
    expect(res.status).to.equal(200);
    expect(res.json.runtimeJwt).to.be.a('string').and.not.equal(expiring);
    expect((await heartbeat(d)).json, 'a fresh token is not refreshed').to.not.have.property('runtimeJwt');
  });

  it('validates params per op, and only org admins and owners enqueue', async () => {
    const d = await registerDaemon(t, acme);
    for (const [op, params] of [
      ['project.add', {}], ['project.add', { projectId: 'x' }], ['pool.deleted', { poolId: 'p', extra: true }],
      ['modelAccess.set', { allow: [] }], ['modelAccess.clear', {}], ['nuke.everything', {}],
    ] as const) {
      const res = await enqueue(acme.ownerToken, d.workerId, op, params);
      expect(res.status, `${op} ${JSON.stringify(params)}`).to.equal(400);
    }
    expect((await enqueue(acme.memberToken, d.workerId)).status).to.equal(403);
    expect((await enqueue(d.runtimeJwt, d.workerId)).status).to.equal(403);
    expect((await t.inject('POST', '/api/daemon/mutations', { body: { workerHostId: d.workerId, op: 'pool.deleted', params: { poolId: 'x' } } })).status).to.equal(401);
    expect((await enqueue(globex.ownerToken, d.workerId)).status, "another org's host").to.equal(404);
    expect((await t.inject('GET', `/api/daemon/mutations?workerHostId=${d.workerId}`, { token: globex.apiKey })).status).to.equal(404);
  });

  it('cancels while undelivered; 409 once delivered or cancelled; 404 unknown or of another org', async () => {
    const d = await registerDaemon(t, acme);
    const m1 = (await enqueue(acme.ownerToken, d.workerId)).json.mutation;
    expect((await t.inject('POST', `/api/daemon/mutations/${m1.id}/cancel`, { token: globex.ownerToken })).status).to.equal(404);
    const cancelled = await t.inject('POST', `/api/daemon/mutations/${m1.id}/cancel`, { token: acme.ownerToken });
    expect(cancelled.status).to.equal(200);
    expect(cancelled.json.mutation).to.include({ status: 'cancelled' });
    expect(cancelled.json.mutation.cancelledAt).to.be.a('string');
    expect((await t.inject('POST', `/api/daemon/mutations/${m1.id}/cancel`, { token: acme.ownerToken })).status).to.equal(409);
    expect((await heartbeat(d)).json.mutations, 'a cancelled mutation is never delivered').to.deep.equal([]);
    const m2 = (await enqueue(acme.ownerToken, d.workerId)).json.mutation;
    await heartbeat(d);
    expect((await t.inject('POST', `/api/daemon/mutations/${m2.id}/cancel`, { token: acme.ownerToken })).status).to.equal(409);
    expect((await t.inject('POST', '/api/daemon/mutations/00000000-0000-4000-8000-000000000000/cancel', { token: acme.ownerToken })).status).to.equal(404);
    expect((await t.inject('POST', '/api/daemon/mutations/nope/cancel', { token: acme.ownerToken })).status).to.equal(404);
  });

  it('a cancel racing a heartbeat has exactly one winner', async () => {
    const d = await registerDaemon(t, acme);
    for (let round = 0; round < 10; round += 1) {
      const m = (await enqueue(acme.ownerToken, d.workerId)).json.mutation;
      const [cancel, hb] = await Promise.all([
        t.inject('POST', `/api/daemon/mutations/${m.id}/cancel`, { token: acme.ownerToken }),
        heartbeat(d),
      ]);
      const delivered = hb.json.mutations.some((x: { id: string }) => x.id === m.id);
      expect(cancel.status === 200, `round ${round}: cancel ${cancel.status}, delivered ${delivered}`).to.equal(!delivered);
      expect(cancel.status).to.be.oneOf([200, 409]);
    }
  });

  it('heartbeat refuses other credentials, a mismatched workerId and hostile bodies without a 5xx', async () => {
    const d = await registerDaemon(t, acme);
    expect((await t.inject('POST', '/api/daemon/heartbeat', { body: { workerId: d.workerId } })).status).to.equal(401);
    expect((await t.inject('POST', '/api/daemon/heartbeat', { token: acme.apiKey, body: { workerId: d.workerId } })).status).to.equal(403);
    expect((await t.inject('POST', '/api/daemon/heartbeat', { token: 'a.b.c', body: { workerId: d.workerId } })).status).to.equal(401);
    expect((await t.inject('POST', '/api/daemon/heartbeat', { token: d.runtimeJwt, body: { workerId: 'other' } })).status).to.equal(403);
    for (const rawBody of ['', '{', '[]', '{"workerId":5}', '\u0000']) {
      const res = await t.inject('POST', '/api/daemon/heartbeat', { token: d.runtimeJwt, rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status, rawBody).to.be.within(400, 499);
    }
  });

  it('step heartbeat updates lastToolCalledAt, and swallows bad credentials into a counter', async () => {
    const d = await registerDaemon(t, acme);
    const id = await dispatch(t, acme);
    await report(t, d, id, 'claimed');
    const ok = await t.inject('POST', `/api/sessions/${id}/step-heartbeat`, { token: d.runtimeJwt, body: { workerId: d.workerId } });
    expect(ok.json).to.deep.equal({ ok: true });
    await eventually(async () => {
      const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
      return typeof detail.json.lastToolCalledAt === 'string';
    }, 'lastToolCalledAt recorded');
    for (const token of [undefined, 'garbage', acme.apiKey]) {
      const res = await t.inject('POST', `/api/sessions/${id}/step-heartbeat`, { ...(token ? { token } : {}), body: { workerId: d.workerId } });
      expect(res.status).to.equal(200);
      expect(res.json).to.deep.equal({ ok: true });
    }
    const metrics = await t.inject('GET', '/metrics');
    expect(metrics.text).to.match(/troupe_step_heartbeats_swallowed_total\{reason="auth"[^}]*\} 3/);
  });

  it('reclaims a session whose worker stopped heartbeating for longer than the lease', async () => {
    const d = await registerDaemon(t, acme);
    const id = await dispatch(t, acme);
    await report(t, d, id, 'claimed');
    await report(t, d, id, 'running');
    const svc = daemonServices(t.node.deps);
    await svc.liveness.flush();
    await t.node.deps.db('daemon_workers').where({ id: d.workerId }).update({ last_seen_at: new Date(Date.now() - svc.leaseMs - 60_000) });
    expect(await svc.sweepLeases()).to.be.greaterThan(0);
    const detail = await t.inject('GET', `/api/public/sessions/${id}`, { token: acme.apiKey });
    expect(detail.json.status).to.equal('pending');
    expect(detail.json.activities.map((a: { kind: string }) => a.kind)).to.include('session.reclaimed');
    expect((await report(t, d, id, 'running')).status, 'the silent worker lost it').to.equal(409);
  });
});

for (const { set, skip } of engineSets) describe(`step heartbeat with the database down (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  it('still answers {ok: true}, never 5xx', async () => {
    const t = await startTestNode({ engines: set });
    try {
      const org = await provisionOrg(t, 'Initech');
      const d = await registerDaemon(t, org);
      const id = await dispatch(t, org);
      await report(t, d, id, 'claimed');
      await t.node.deps.db.destroy();
      for (let i = 0; i < 3; i += 1) {
        const res = await t.inject('POST', `/api/sessions/${id}/step-heartbeat`, { token: d.runtimeJwt, body: { workerId: d.workerId } });
        expect(res.status).to.equal(200);
        expect(res.json).to.deep.equal({ ok: true });
      }
      await daemonServices(t.node.deps).steps.flush();
      const res = await t.inject('POST', `/api/sessions/${id}/step-heartbeat`, { token: 'x.y.z', body: { workerId: d.workerId } });
      expect(res.status).to.equal(200);
    } finally {
      await t.close().catch(() => undefined);
    }
  });
});
