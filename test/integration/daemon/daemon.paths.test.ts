// Invariant (spec 9.6, issue 32): the daemon heartbeat and poll are served under /api/daemon/…, and the /v1/daemon/…
// forms that running workers still call answer exactly as they do — same replies, same refusals, one shared state —
// while the OpenAPI document marks only those aliases deprecated. Registration stays at /v1/daemon/register.
import { expect } from 'chai';
import { engineSets, startTestNode, type CallResult, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, type Daemon, type Org } from '../sessions/support.js';

const FORMS = { heartbeat: ['/api/daemon/heartbeat', '/v1/daemon/heartbeat'], poll: ['/api/daemon/poll', '/v1/daemon/poll'] } as const;

/** What a client sees of an answer: status, error code and body. */
const seen = (r: CallResult) => ({ status: r.status, body: r.json });

for (const { set, skip } of engineSets) describe(`daemon paths: /api and the deprecated /v1 aliases (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: Org;
  let d: Daemon;
  before(async () => {
    t = await startTestNode({ engines: set });
    acme = await provisionOrg(t, 'Acme');
    d = await registerDaemon(t, acme);
  });
  after(() => t?.close());

  const post = (path: string, token: string | undefined, body: unknown) => t.call('POST', path, { ...(token ? { token } : {}), body });

  it('answers a heartbeat identically on both paths, and a mutation is delivered once across them', async () => {
    const [current, legacy] = FORMS.heartbeat;
    const quiet = await post(current, d.runtimeJwt, { workerId: d.workerId });
    expect(seen(quiet)).to.deep.equal({ status: 200, body: { ok: true, mutations: [] } });
    expect(seen(await post(legacy, d.runtimeJwt, { workerId: d.workerId }))).to.deep.equal(seen(quiet));

    const queued = await t.call('POST', '/api/daemon/mutations', {
      token: acme.ownerToken, body: { workerHostId: d.workerId, op: 'pool.deleted', params: { poolId: 'gpu-a' } },
    });
    expect(queued.status, queued.text).to.equal(201);
    const viaLegacy = await post(legacy, d.runtimeJwt, { workerId: d.workerId });
    expect(viaLegacy.json.mutations.map((m: { id: string }) => m.id)).to.deep.equal([queued.json.mutation.id]);
    expect((await post(current, d.runtimeJwt, { workerId: d.workerId })).json.mutations, 'already delivered through the alias').to.deep.equal([]);
  });

  it('offers the same pending sessions on both poll paths', async () => {
    const sessionId = await dispatch(t, acme);
    const [current, legacy] = FORMS.poll;
    const polled = await post(current, d.runtimeJwt, { workerId: d.workerId, capacity: 10 });
    expect(polled.status, polled.text).to.equal(200);
    expect(polled.json.sessions.map((s: { id: string }) => s.id)).to.include(sessionId);
    expect(seen(await post(legacy, d.runtimeJwt, { workerId: d.workerId, capacity: 10 }))).to.deep.equal(seen(polled));
  });

  it('refuses the same bad requests with the same status and code on both paths', async () => {
    const other = await registerDaemon(t, await provisionOrg(t, 'Globex'), 'globex-host');
    for (const [current, legacy] of Object.values(FORMS)) {
      const refusals: [string, string | undefined, unknown][] = [
        ['no token', undefined, { workerId: d.workerId, capacity: 1 }],
        ["an API key, not a runtime token", acme.apiKey, { workerId: d.workerId, capacity: 1 }],
        ["another worker's id", other.runtimeJwt, { workerId: d.workerId, capacity: 1 }],
        ['a body its schema refuses', d.runtimeJwt, { workerId: d.workerId, capacity: 'many', load: 'high' }],
      ];
      for (const [name, token, body] of refusals) {
        const a = await post(current, token, body);
        const b = await post(legacy, token, body);
        expect(a.status, `${current}: ${name}`).to.be.within(400, 499);
        expect(a.json.code, `${current}: ${name}`).to.be.a('string');
        expect([b.status, b.json.code], `${legacy}: ${name}`).to.deep.equal([a.status, a.json.code]);
      }
    }
  });

  it('documents both forms, the /v1 aliases alone marked deprecated, with the same request and reply', async () => {
    const doc = (await t.call('GET', '/api/openapi.json')).json;
    for (const [current, legacy] of Object.values(FORMS)) {
      const now = doc.paths[current].post;
      const old = doc.paths[legacy].post;
      expect(now.deprecated, current).to.equal(undefined);
      expect(old.deprecated, legacy).to.equal(true);
      expect(old.summary).to.include(current);
      expect(old.requestBody).to.deep.equal(now.requestBody);
      expect(Object.keys(old.responses)).to.deep.equal(Object.keys(now.responses));
      expect(old.responses['200'].content).to.deep.equal(now.responses['200'].content);
      expect(old.security).to.deep.equal(now.security);
    }
    expect(doc.paths['/v1/daemon/register'].post.deprecated, 'registration lives under /v1 (spec 9.6)').to.equal(undefined);
    expect(doc.paths['/api/daemon/register'], 'registration has no /api form').to.equal(undefined);
  });
});
