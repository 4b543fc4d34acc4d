// Invariant: the route table decides what answers — a known path and method reaches its handler with decoded params
// and query, an unknown path is 404 ROUTE_NOT_FOUND, a known path with another method is 405 — and every reply is
// JSON with a request id, while errors map to {error, code} and never carry a stack trace.
import { expect } from 'chai';
import { TroupeError } from '../../../ops/kernel/errors.js';
import type { Route } from '../../../http/types.js';
import { startTestServer, type TestDeps, type TestServer } from '../../support/http.js';

const routes: Route<TestDeps>[] = [
  {
    method: 'get',
    path: '/api/things/:id',
    auth: 'none',
    summary: 'echo',
    handler: async (req) => ({ body: { id: req.params.id, q: req.query.get('q'), method: req.method, path: req.path, requestId: req.requestId } }),
  },
  { method: 'post', path: '/api/things', auth: 'none', summary: 'create', successStatus: 201, handler: async (req) => ({ status: 201, body: { got: req.body } }) },
  { method: 'get', path: '/api/things/static', auth: 'none', summary: 'static beats param', handler: async () => ({ body: { static: true } }) },
  { method: 'get', path: '/api/conflict', auth: 'none', summary: 'typed error', handler: async () => { throw new TroupeError('CONFLICT', 'already running', { sessionId: 's1' }); } },
  { method: 'get', path: '/api/boom', auth: 'none', summary: 'bug', handler: async () => { throw new Error('secret detail at /srv/db.ts:42'); } },
  { method: 'get', path: '/api/internal', auth: 'none', summary: 'internal', handler: async () => { throw new TroupeError('INTERNAL', 'pg said: relation "x" does not exist'); } },
  { method: 'get', path: '/api/text', auth: 'none', summary: 'text', handler: async () => ({ kind: 'text', body: 'plain', contentType: 'text/plain; charset=utf-8' }) },
  { method: 'get', path: '/api/headers', auth: 'none', summary: 'headers', handler: async () => ({ body: {}, headers: { deprecation: 'true', link: '</api/new>; rel="successor-version"' } }) },
  { method: 'get', path: '/api/bad-header', auth: 'none', summary: 'header injection', handler: async () => ({ body: {}, headers: { 'x-evil': 'a\r\nset-cookie: x=1' } }) },
  { method: 'delete', path: '/api/things/:id', auth: 'none', summary: 'delete', handler: async () => ({ status: 204, body: undefined }) },
];

describe('http server: routing and error mapping', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer(routes);
  });
  after(async () => {
    await t.close();
  });

  it('routes to the handler with decoded params and the query', async () => {
    const r = await t.call('GET', '/api/things/a%20b?q=x%26y');
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    expect(r.json).to.include({ id: 'a b', q: 'x&y', method: 'GET', path: '/api/things/a%20b' });
  });

  it('prefers a static segment over a parameter', async () => {
    expect((await t.call('GET', '/api/things/static')).json).to.deep.equal({ static: true });
  });

  it('answers an unknown path with 404 ROUTE_NOT_FOUND', async () => {
    const r = await t.call('GET', '/api/nope');
    expect(r.status).to.equal(404);
    expect(r.json).to.deep.equal({ error: 'no such route', code: 'ROUTE_NOT_FOUND' });
  });

  it('answers a known path with the wrong method with 405 and Allow', async () => {
    const r = await t.call('PUT', '/api/things/1');
    expect(r.status).to.equal(405);
    expect(r.json.code).to.equal('METHOD_NOT_ALLOWED');
    expect(r.headers.get('allow')).to.equal('GET, DELETE');
  });

  it('answers 400 for a path parameter with a broken percent-escape', async () => {
    const r = await t.call('GET', '/api/things/%E0%A4%A');
    expect(r.status).to.equal(400);
    expect(r.json.code).to.equal('VALIDATION_FAILED');
  });

  it('echoes a sane x-request-id and replaces one that is not', async () => {
    const kept = await t.call('GET', '/api/things/1', { headers: { 'x-request-id': 'req-123.abc' } });
    expect(kept.headers.get('x-request-id')).to.equal('req-123.abc');
    expect(kept.json.requestId).to.equal('req-123.abc');
    const replaced = await t.call('GET', '/api/things/1', { headers: { 'x-request-id': 'bad id with spaces <script>' } });
    expect(replaced.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    const generated = await t.call('GET', '/api/nope');
    expect(generated.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  it('uses the status the handler returns', async () => {
    const r = await t.call('POST', '/api/things', { body: { a: 1 } });
    expect(r.status).to.equal(201);
    expect(r.json).to.deep.equal({ got: { a: 1 } });
    const gone = await t.call('DELETE', '/api/things/1');
    expect(gone.status).to.equal(204);
    expect(gone.text).to.equal('');
  });

  it('maps a TroupeError to its status, message, code and details', async () => {
    const r = await t.call('GET', '/api/conflict');
    expect(r.status).to.equal(409);
    expect(r.json).to.deep.equal({ error: 'already running', code: 'CONFLICT', details: { sessionId: 's1' } });
  });

  it('answers a plain Error with 500 INTERNAL and no stack or message on the wire, and logs the stack', async () => {
    const r = await t.call('GET', '/api/boom');
    expect(r.status).to.equal(500);
    expect(r.json).to.deep.equal({ error: 'internal error', code: 'INTERNAL' });
    expect(r.text).not.to.match(/secret|\/srv|at /);
    const logged = t.lines.find((l) => (l.err as { message?: string } | undefined)?.message === 'secret detail at /srv/db.ts:42');
    expect((logged?.err as { stack?: string } | undefined)?.stack).to.be.a('string');
  });

  it('never repeats an INTERNAL TroupeError message on the wire', async () => {
    const r = await t.call('GET', '/api/internal');
    expect(r.status).to.equal(500);
    expect(r.json).to.deep.equal({ error: 'internal error', code: 'INTERNAL' });
  });

  it('serves text replies with their own content type, and reply headers', async () => {
    const text = await t.call('GET', '/api/text');
    expect(text.headers.get('content-type')).to.equal('text/plain; charset=utf-8');
    expect(text.text).to.equal('plain');
    const h = await t.call('GET', '/api/headers');
    expect(h.headers.get('deprecation')).to.equal('true');
    expect(h.headers.get('link')).to.equal('</api/new>; rel="successor-version"');
  });

  it('refuses to write a reply header carrying CR/LF (500, nothing injected)', async () => {
    const r = await t.call('GET', '/api/bad-header');
    expect(r.status).to.equal(500);
    expect(r.headers.get('set-cookie')).to.equal(null);
  });

  it('logs one access line per request with method, route pattern, status, duration and id, never credentials', async () => {
    await t.call('GET', '/api/things/42', { headers: { 'x-request-id': 'log-check-1', authorization: 'Bearer super-secret-token', cookie: 'troupe_session=abc' } });
    const line = t.lines.find((l) => l.reqId === 'log-check-1' && l.msg === 'http request');
    expect(line).to.include({ method: 'GET', route: '/api/things/:id', status: 200 });
    expect(line?.ms).to.be.a('number');
    expect(JSON.stringify(t.lines)).not.to.include('super-secret-token');
  });

  it('records the duration histogram by route pattern, method and status', async () => {
    await t.call('GET', '/api/things/7');
    const text = await t.deps.metrics.metrics();
    expect(text).to.match(/troupe_http_request_duration_seconds_count\{method="GET",route="\/api\/things\/:id",status="200"\} \d+/);
    expect(text).to.include('troupe_http_requests_in_flight 0');
  });
});
