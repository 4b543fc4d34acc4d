// Invariant: a whole node starts on embedded defaults and on the real engines, reports itself healthy and ready only
// when its storage, transport and cache answer, serves its OpenAPI document and metrics, and shuts down cleanly.
import { expect } from 'chai';
import { skipEngine } from '../../support/engines.js';
import { startTestNode, type EngineSet, type TestNode } from '../../support/node.js';

const sets: EngineSet[] = skipEngine.postgres || skipEngine.redis || skipEngine.amqp ? ['embedded'] : ['embedded', 'real'];

for (const set of sets) {
  describe(`node on ${set} engines`, function () {
    this.timeout(60_000);
    let t: TestNode;
    before(async () => { t = await startTestNode({ engines: set }); });
    after(async () => { await t?.close(); });

    it('is live and ready', async () => {
      expect((await t.call('GET', '/healthz')).status).to.equal(200);
      const ready = await t.call('GET', '/readyz');
      expect(ready.status, ready.text).to.equal(200);
    });

    it('serves Prometheus metrics with the node label', async () => {
      const res = await t.call('GET', '/metrics');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.contain('text/plain');
      expect(res.text).to.contain(`node="${t.config.nodeId}"`);
    });

    it('serves an OpenAPI 3.1 document that lists its own routes', async () => {
      const res = await t.call('GET', '/api/openapi.json');
      expect(res.status).to.equal(200);
      expect(res.json.openapi).to.match(/^3\.1\./);
      expect(res.json.paths).to.have.property('/healthz');
      expect(res.json.paths).to.have.property('/api/openapi.json');
    });

    it('answers an unknown route with a JSON 404 carrying a code', async () => {
      const res = await t.call('GET', '/api/nothing-here');
      expect(res.status).to.equal(404);
      expect(res.json).to.include({ code: 'ROUTE_NOT_FOUND' });
      expect(res.json.error).to.be.a('string');
    });
  });
}
