// Invariant: a request injected without a socket (test/support/inject.ts) is answered exactly as the same request
// over a real socket: status, `{error, code}` body, content type and retry-after, for every step of the pipeline
// (auth, same-origin, rate limit, body cap, decoding, validation, a declared `authorize` with its tenancy lookup,
// handler errors, 404 and 405). And a declared `authorize` runs once, after validation and before the handler,
// with tenancy (404) ahead of Cedar (403).
import { expect } from 'chai';
import { TroupeError } from '../../../ops/kernel/errors.js';
import type { Principal } from '../../../actors/services/identity/principal.js';
import type { ResourceRef } from '../../../actors/services/identity/ports.js';
import type { EdgeHooks } from '../../../http/pipeline.js';
import type { Route } from '../../../http/types.js';
import { orgPrincipal } from '../../../http/principal.js';
import { injector, inject, type InjectResult } from '../../support/inject.js';
import { startTestServer, testDeps, testPrincipals, testTokens, type CallResult, type TestDeps, type TestServer } from '../../support/http.js';

const asked: Array<{ action: string; resource: ResourceRef }> = [];
let handled = 0;
const hooks: EdgeHooks = {
  async authorize(principal: Principal, action: string, resource: ResourceRef) {
    asked.push({ action, resource });
    if (principal.kind === 'apiKey') throw new TroupeError('AUTHZ_DENIED');
  },
  async limitRequest(_kind, principal) {
    if (principal.kind === 'machine') throw new TroupeError('RATE_LIMITED', undefined, { retryAfterSeconds: 7 });
  },
};

const routes: Route<TestDeps>[] = [
  {
    method: 'get', path: '/api/things/:id', auth: 'org', summary: 'a thing of the caller\'s org',
    authorize: {
      async find(req, _deps, p) {
        if (req.params.id !== 'mine') throw new TroupeError('NOT_FOUND', 'thing not found');
        return { id: 'mine', orgId: p.orgId };
      },
      action: 'read',
      resource: (_req, _p, thing) => ({ type: 'Org', id: thing.id, orgId: thing.orgId }),
    },
    async handler(req, _deps, { found }) {
      handled++;
      return { body: { found, query: req.query.get('q') } };
    },
  },
  {
    method: 'post', path: '/api/things', auth: 'any', summary: 'make a thing', bodyLimit: 64, successStatus: 201,
    bodySchema: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string', minLength: 1 } } },
    authorize: { action: 'edit', resource: (req, p) => ({ type: 'Org', id: (req.body as { name: string }).name, orgId: p.orgId }) },
    async handler(req) {
      handled++;
      if ((req.body as { name: string }).name === 'boom') throw new Error('a bug');
      if ((req.body as { name: string }).name === 'taken') throw new TroupeError('CONFLICT', 'name taken');
      return { body: { by: orgPrincipal(req).kind }, headers: { 'x-made': 'yes', 'x-request-id': 'spoofed' } };
    },
  },
  {
    method: 'get', path: '/api/things/list', auth: 'none', summary: 'a literal segment beside a parameter',
    async handler() {
      return { kind: 'text', body: 'listed', contentType: 'text/plain; charset=utf-8', status: 203 };
    },
  },
  {
    method: 'delete', path: '/api/things/:id', auth: 'admin', summary: 'admin only', successStatus: 204,
    async handler() {
      return { body: null };
    },
  },
];

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = (body: unknown) => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

const cases: Array<[string, string, string, { body?: string; headers?: Record<string, string> }]> = [
  ['found and allowed', 'GET', '/api/things/mine?q=a%20b', { headers: bearer(testTokens.user) }],
  ['another org\'s or absent: 404 before Cedar', 'GET', '/api/things/yours', { headers: bearer(testTokens.apiKey) }],
  ['found, denied by Cedar: 403', 'GET', '/api/things/mine', { headers: bearer(testTokens.apiKey) }],
  ['no credential: 401', 'GET', '/api/things/mine', {}],
  ['forged credential: 401', 'GET', '/api/things/mine', { headers: bearer('forged') }],
  ['admin token on an org route: 403', 'GET', '/api/things/mine', { headers: bearer(testTokens.admin) }],
  ['malformed percent-encoding in a parameter: 400', 'GET', '/api/things/%E0%A4%A', { headers: bearer(testTokens.user) }],
  ['literal segment wins over a parameter', 'GET', '/api/things/list', {}],
  ['created, own headers kept, request id not spoofable', 'POST', '/api/things', { ...json({ name: 'a' }), headers: { ...bearer(testTokens.runtime), 'content-type': 'application/json' } }],
  ['invalid body: 400 before Cedar', 'POST', '/api/things', { body: JSON.stringify({ name: '' }), headers: { ...bearer(testTokens.apiKey), 'content-type': 'application/json' } }],
  ['malformed JSON: 400', 'POST', '/api/things', { body: '{"name":', headers: { ...bearer(testTokens.user), 'content-type': 'application/json' } }],
  ['wrong content type: 415', 'POST', '/api/things', { body: 'name=a', headers: { ...bearer(testTokens.user), 'content-type': 'application/x-www-form-urlencoded' } }],
  ['body over the cap: 413', 'POST', '/api/things', { body: JSON.stringify({ name: 'x'.repeat(100) }), headers: { ...bearer(testTokens.user), 'content-type': 'application/json' } }],
  ['rate limited: 429 with retry-after', 'POST', '/api/things', { body: JSON.stringify({ name: 'a' }), headers: { ...bearer(testTokens.machine), 'content-type': 'application/json' } }],
  ['cookie write without same-origin: 403', 'POST', '/api/things', { body: JSON.stringify({ name: 'a' }), headers: { cookie: `troupe_session=${testTokens.session}`, 'content-type': 'application/json' } }],
  ['handler conflict: 409', 'POST', '/api/things', { body: JSON.stringify({ name: 'taken' }), headers: { ...bearer(testTokens.user), 'content-type': 'application/json' } }],
  ['handler bug: bare 500', 'POST', '/api/things', { body: JSON.stringify({ name: 'boom' }), headers: { ...bearer(testTokens.user), 'content-type': 'application/json' } }],
  ['204 without a body', 'DELETE', '/api/things/mine', { headers: bearer(testTokens.admin) }],
  ['known path, other method: 405', 'PUT', '/api/things/mine', { headers: bearer(testTokens.user) }],
  ['unknown path: 404', 'GET', '/api/nothing/here', {}],
];

describe('injected requests answer as a socket does', () => {
  let t: TestServer;
  const deps = testDeps();
  const injected = injector(routes, deps, { hooks });
  before(async () => {
    t = await startTestServer(routes, { deps, hooks });
  });
  after(() => t.close());

  const shapeOf = (r: CallResult | InjectResult) => ({
    status: r.status,
    json: r.json,
    text: r.json === undefined ? r.text : undefined,
    contentType: r.status === 204 ? null : r.headers.get('content-type'),
    retryAfter: r.headers.get('retry-after'),
    made: r.headers.get('x-made'),
    allow: r.headers.get('allow'),
    requestId: r.headers.get('x-request-id') === 'spoofed',
  });

  for (const [name, method, path, init] of cases) {
    it(name, async () => {
      const overSocket = await t.call(method, path, init);
      const withoutSocket = await injected(method, path, { ...(init.body !== undefined ? { rawBody: init.body } : {}), headers: init.headers ?? {} });
      expect(shapeOf(withoutSocket)).to.deep.equal(shapeOf(overSocket));
    });
  }

  it('evaluates a declared authorize once per request, after validation, tenancy first, before the handler', async () => {
    const route = routes[0]!;
    asked.length = 0;
    handled = 0;
    expect((await inject(route, { params: { id: 'yours' }, token: testTokens.user }, deps, { hooks })).status).to.equal(404);
    expect(asked, 'Cedar is not asked about what tenancy hid').to.deep.equal([]);
    const denied = await inject(route, { params: { id: 'mine' }, token: testTokens.apiKey }, deps, { hooks });
    expect([denied.status, denied.json.code, handled]).to.deep.equal([403, 'AUTHZ_DENIED', 0]);
    const allowed = await inject(route, { params: { id: 'mine' }, token: testTokens.user }, deps, { hooks });
    expect([allowed.status, handled]).to.deep.equal([200, 1]);
    expect(allowed.json.found).to.deep.equal({ id: 'mine', orgId: testPrincipals.user.orgId });
    expect(asked).to.deep.equal([
      { action: 'read', resource: { type: 'Org', id: 'mine', orgId: 'o1' } },
      { action: 'read', resource: { type: 'Org', id: 'mine', orgId: 'o1' } },
    ]);
    asked.length = 0;
    expect((await inject(routes[1]!, { body: { name: '' }, token: testTokens.user }, deps, { hooks })).status).to.equal(400);
    expect(asked, 'an invalid body never reaches Cedar').to.deep.equal([]);
  });

  it('refuses to serve a route that declares authorize without an authorizer (fails closed)', async () => {
    let failure: unknown;
    try {
      await inject({ ...routes[0]! }, { params: { id: 'mine' }, token: testTokens.user }, deps);
    } catch (err) {
      failure = err;
    }
    expect(String(failure)).to.match(/declares authorize, but the edge has no authorizer/);
  });
});
