// Invariant: /healthz answers while the process is up; /readyz is 200 only when every readiness probe passes and
// otherwise 503 naming each failed dependency (a probe that throws or hangs counts as down); /metrics serves the
// Prometheus registry in its own content type; /api/openapi.json is an OpenAPI 3.1.0 document listing every route.
import { expect } from 'chai';
import { healthRoutes, type ReadinessProbes } from '../../../http/routes/health.js';
import { openApiRoute } from '../../../http/routes/openapi.js';
import type { Route } from '../../../http/types.js';
import { startTestServer, type TestDeps, type TestServer } from '../../support/http.js';

describe('http health, metrics and OpenAPI routes', () => {
  const state = { storage: true, cache: true, transportThrows: false };
  const probes: ReadinessProbes = {
    storage: async () => state.storage,
    transport: async () => {
      if (state.transportThrows) throw new Error('connection refused');
      return true;
    },
    cache: async () => state.cache,
  };
  const routes: Route<TestDeps>[] = [];
  routes.push(
    ...healthRoutes<TestDeps>(probes),
    openApiRoute<TestDeps>(() => routes),
    { method: 'get', path: '/api/org/teams/:id/members', auth: 'org', summary: 'members', tags: ['teams'], querySchema: { type: 'object', properties: { limit: { type: 'integer' } } }, handler: async () => ({ body: {} }) },
    { method: 'post', path: '/api/org/api-keys', auth: 'org', summary: 'old keys', deprecated: true, bodySchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } }, handler: async () => ({ body: {} }) },
    { method: 'post', path: '/api/admin/orgs', auth: 'admin', summary: 'create org', successStatus: 201, handler: async () => ({ body: {} }) },
    { method: 'get', path: '/api/sessions/events', auth: 'org', summary: 'live events', sse: true, handler: async () => ({ kind: 'sse', open: (s) => s.close() }) },
  );

  let t: TestServer;
  before(async () => {
    t = await startTestServer(routes);
  });
  after(async () => {
    await t.close();
  });

  it('answers /healthz', async () => {
    const r = await t.call('GET', '/healthz');
    expect(r.status).to.equal(200);
    expect(r.json).to.deep.equal({ ok: true });
  });

  it('answers /readyz 200 when every probe passes, 503 naming those that fail', async () => {
    expect((await t.call('GET', '/readyz')).json).to.deep.equal({ ok: true, checks: { storage: true, transport: true, cache: true } });
    state.storage = false;
    state.transportThrows = true;
    try {
      const r = await t.call('GET', '/readyz');
      expect(r.status).to.equal(503);
      expect(r.json.checks).to.deep.equal({ storage: false, transport: false, cache: true });
      expect(r.json.error).to.equal('not ready: storage, transport unavailable');
      expect(r.json.code).to.equal('STORAGE_UNAVAILABLE');
    } finally {
      state.storage = true;
      state.transportThrows = false;
    }
  });

  it('serves Prometheus text at /metrics, including the HTTP metrics', async () => {
    await t.call('GET', '/healthz');
    const r = await t.call('GET', '/metrics');
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.equal(t.deps.metrics.contentType);
    expect(r.text).to.include('# TYPE troupe_http_request_duration_seconds histogram');
    expect(r.text).to.include('troupe_http_requests_in_flight');
    expect(r.text).to.include('troupe_http_sse_streams');
  });

  it('serves an OpenAPI 3.1.0 document listing every route', async () => {
    const r = await t.call('GET', '/api/openapi.json');
    expect(r.status).to.equal(200);
    const doc = JSON.parse(r.text);
    expect(doc.openapi).to.equal('3.1.0');
    for (const route of routes) {
      const path = route.path.replace(/:(\w+)/g, '{$1}');
      expect(doc.paths[path]?.[route.method], `${route.method} ${path}`).to.be.an('object');
      expect(doc.paths[path][route.method].summary).to.equal(route.summary);
    }
    const members = doc.paths['/api/org/teams/{id}/members'].get;
    expect(members.parameters).to.deep.include({ name: 'id', in: 'path', required: true, schema: { type: 'string' } });
    expect(members.parameters).to.deep.include({ name: 'limit', in: 'query', required: false, schema: { type: 'integer' } });
    expect(members.security).to.deep.include({ userToken: [] });
    expect(members.tags).to.deep.equal(['teams']);
    const oldKeys = doc.paths['/api/org/api-keys'].post;
    expect(oldKeys.deprecated).to.equal(true);
    expect(oldKeys.requestBody.content['application/json'].schema.required).to.deep.equal(['name']);
    expect(oldKeys.responses['400'].content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/Error' });
    expect(doc.paths['/api/admin/orgs'].post.security).to.deep.equal([{ adminToken: [] }]);
    expect(doc.paths['/api/admin/orgs'].post.responses).to.have.property('201');
    expect(doc.paths['/healthz'].get.security).to.deep.equal([]);
    expect(doc.paths['/api/sessions/events'].get.responses['200'].content).to.have.property('text/event-stream');
    expect(doc.components.schemas.Error.required).to.deep.equal(['error', 'code']);
    expect(doc.components.schemas.Error.properties.code.enum).to.include('VALIDATION_FAILED');
    const operationIds = Object.values(doc.paths).flatMap((p) => Object.values(p as Record<string, { operationId: string }>).map((o) => o.operationId));
    expect(new Set(operationIds).size).to.equal(operationIds.length);
  });
});
