// Invariant: a node over its budget for writes answers the next write 503 OVERLOADED with Retry-After at once, over a
// connection it can keep using, while reads and exempt writes (heartbeats) are still served; once a slot frees,
// writes are served again; every refusal is counted in /metrics.
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import type { Route } from '../../../http/types.js';
import { startTestServer, type TestDeps, type TestServer } from '../../support/http.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('http server: admission control for writes', () => {
  let t: TestServer;
  let release = deferred();
  let entered = deferred();
  const routes: Route<TestDeps>[] = [
    {
      method: 'post', path: '/slow', auth: 'none', summary: 'a write that waits',
      handler: async () => {
        entered.resolve();
        await release.promise;
        return { body: { done: true } };
      },
    },
    { method: 'post', path: '/beat', auth: 'none', summary: 'exempt write', admission: 'exempt', handler: async () => ({ body: { ok: true } }) },
    { method: 'get', path: '/read', auth: 'none', summary: 'a read', handler: async () => ({ body: { ok: true } }) },
    { method: 'post', path: '/small', auth: 'none', summary: 'a write with a small cap', bodyLimit: 64, handler: async () => ({ body: { ok: true } }) },
  ];

  beforeEach(async () => {
    release = deferred();
    entered = deferred();
    t = await startTestServer(routes, { admission: { concurrency: 1, queue: 1, maxWaitMs: 300 } });
  });
  afterEach(async () => {
    release.resolve();
    await t.close();
  });

  it('refuses a write past the queue at once with 503 OVERLOADED and Retry-After, and keeps serving reads and exempt writes', async () => {
    const first = t.call('POST', '/slow', { body: {} });
    await entered.promise;
    const queued = t.call('POST', '/slow', { body: {} });
    await new Promise((r) => setTimeout(r, 20));
    const started = performance.now();
    const refused = await t.call('POST', '/slow', { body: { some: 'body' } });
    expect(performance.now() - started).to.be.below(250);
    expect(refused.status).to.equal(503);
    expect(refused.headers.get('retry-after')).to.equal('1');
    expect(refused.json).to.include({ code: 'OVERLOADED' });
    expect(refused.json.error).to.be.a('string');
    expect(refused.json.details).to.deep.equal({ reason: 'queue_full', retryAfterSeconds: 1 });
    expect((await t.call('GET', '/read')).status).to.equal(200);
    expect((await t.call('POST', '/beat', { body: {} })).status).to.equal(200);
    release.resolve();
    expect((await first).status).to.equal(200);
    expect((await queued).status).to.equal(200);
    expect((await t.call('POST', '/slow', { body: {} })).status, 'served again once a slot is free').to.equal(200);
    const metrics = await t.deps.metrics.metrics();
    expect(metrics).to.match(/^troupe_http_shed_total\{reason="queue_full"\} 1$/m);
    expect(metrics).to.match(/^troupe_http_admission\{state="serving"\} 0$/m);
  });

  it('answers a refused write whose body is over its cap 413, as it would an admitted one', async () => {
    const first = t.call('POST', '/slow', { body: {} });
    await entered.promise;
    const queued = t.call('POST', '/slow', { body: {} });
    await new Promise((r) => setTimeout(r, 20));
    const tooLarge = await t.call('POST', '/small', { body: { pad: 'x'.repeat(1_000) } });
    expect(tooLarge.status).to.equal(413);
    expect(tooLarge.json).to.include({ code: 'HTTP_BODY_TOO_LARGE' });
    release.resolve();
    expect((await first).status).to.equal(200);
    expect((await queued).status).to.equal(200);
  });

  it('forgets a queued write whose client went away with its body half sent, and serves the next', async () => {
    const unhandled: unknown[] = [];
    const note = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', note);
    try {
      await halfSentThenGone();
    } finally {
      process.off('unhandledRejection', note);
    }
    expect(unhandled, 'the aborted body read is nobody\'s unhandled rejection').to.deep.equal([]);
  });

  async function halfSentThenGone(): Promise<void> {
    const first = t.call('POST', '/slow', { body: {} });
    await entered.promise;
    const socket = net.connect(t.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write('POST /slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"half":');
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    await new Promise((r) => setTimeout(r, 50));
    release.resolve();
    expect((await first).status).to.equal(200);
    expect((await t.call('POST', '/slow', { body: {} })).status).to.equal(200);
  }

  it('refuses a queued write whose wait ran out, then answers the next request on the same connection', async () => {
    const first = t.call('POST', '/slow', { body: {} });
    await entered.promise;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const post = (path: string) => new Promise<{ status: number; body: string; socket: unknown }>((resolve, reject) => {
      const req = http.request(`${t.url}${path}`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, socket: req.socket }));
      });
      req.on('error', reject);
      req.end('{"x":1}');
    });
    const started = performance.now();
    const waited = await post('/slow');
    expect(waited.status).to.equal(503);
    expect(JSON.parse(waited.body)).to.deep.include({ code: 'OVERLOADED', details: { reason: 'waited_too_long', retryAfterSeconds: 1 } });
    expect(performance.now() - started).to.be.within(250, 2_000);
    const next = await post('/beat');
    expect(next.status).to.equal(200);
    expect(next.socket, 'the connection was kept').to.equal(waited.socket);
    agent.destroy();
    release.resolve();
    expect((await first).status).to.equal(200);
    expect(await t.deps.metrics.metrics()).to.match(/^troupe_http_shed_total\{reason="waited_too_long"\} 1$/m);
  });
});
