// Invariant: the node's route table has no duplicate method+path, and the OpenAPI document built from it lists
// every route it serves.
import { expect } from 'chai';
import { allRoutes } from '../../../http/routes.js';
import { buildOpenApi } from '../../../schemas/openapi.js';
import { compileRouteValidators, compileRouteValidatorsNow } from '../../../http/validation.js';

describe('http route table', () => {
  it('declares each method and path once, health and OpenAPI included', () => {
    const routes = allRoutes();
    const keys = routes.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).to.equal(keys.length);
    expect(keys).to.include.members(['get /healthz', 'get /readyz', 'get /metrics', 'get /api/openapi.json']);
  });

  it('documents every route in OpenAPI 3.1.0', () => {
    const routes = allRoutes();
    const doc = buildOpenApi(routes) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).to.equal('3.1.0');
    for (const r of routes) expect(doc.paths[r.path.replace(/:(\w+)/g, '{$1}')]?.[r.method], `${r.method} ${r.path}`).to.be.an('object');
    expect(() => JSON.parse(JSON.stringify(doc))).not.to.throw();
  });

  // Validators compile on a route's first call, so this is where a schema that does not compile is caught.
  it('compiles every route\'s body and query schemas', () => {
    for (const route of allRoutes()) expect(() => compileRouteValidatorsNow(route), `${route.method} ${route.path}`).not.to.throw();
  });

  it('names the route whose schema does not compile, on its first call', () => {
    const broken = { method: 'post', path: '/api/broken', bodySchema: { type: 'object', properties: { a: { type: 'nonsense' } } } };
    const validators = compileRouteValidators(broken as never);
    expect(() => validators.body?.()).to.throw(/route POST \/api\/broken: schema does not compile/);
  });
});
