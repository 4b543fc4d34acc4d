// Invariant: a route that names the headers it reads (`readsHeaders`) gets exactly those and the edge's own, read off
// the socket by name, while every other route gets every header; the edge's own checks (authentication, request id,
// body length) work the same either way, and `inject` sees what the socket sees.
import { expect } from 'chai';
import type { Route } from '../../../http/types.js';
import { inject } from '../../support/inject.js';
import { rawExchange, startTestServer, type TestDeps, type TestServer } from '../../support/http.js';

const echo = (req: { headers: Readonly<Record<string, string>>; body: unknown; requestId: string }) =>
  ({ body: { headers: { ...req.headers }, body: req.body, requestId: req.requestId } });

const routes: Route<TestDeps>[] = [
  { method: 'post', path: '/api/named', auth: 'none', readsHeaders: ['X-Wanted'], summary: 'named headers', handler: async (req) => echo(req) },
  { method: 'post', path: '/api/every', auth: 'none', summary: 'every header', handler: async (req) => echo(req) },
];

/** Writes one request by hand (fetch cannot repeat a header or send one empty) and reads its status and JSON. */
async function rawPost(port: number, path: string, headerLines: string[], body: string): Promise<{ status: number; json: any }> {
  const head = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...headerLines, `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close', '', ''].join('\r\n');
  const text = await rawExchange(port, head, Buffer.from(body));
  const [status = '', payload = ''] = text.split('\r\n\r\n');
  return { status: Number(status.split(' ')[1]), json: JSON.parse(payload) };
}

describe('http server: the headers a route reads', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer(routes);
  });
  after(async () => {
    await t.close();
  });

  const sent = { 'x-wanted': 'yes', 'x-unwanted': 'no', 'x-request-id': 'req-headers-1', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };

  it('gives a route that names its headers those and the edge\'s own, and nothing else', async () => {
    const r = await t.call('POST', '/api/named', { body: { a: 1 }, headers: sent });
    expect(r.status).to.equal(200);
    expect(r.json.body).to.deep.equal({ a: 1 });
    expect(r.json.requestId).to.equal('req-headers-1');
    expect(r.headers.get('x-request-id')).to.equal('req-headers-1');
    expect(r.json.headers).to.include({ 'x-wanted': 'yes', 'x-request-id': 'req-headers-1', 'content-type': 'application/json', traceparent: sent.traceparent });
    expect(r.json.headers).to.have.property('content-length');
    expect(r.json.headers).to.not.have.property('x-unwanted');
  });

  it('gives every other route every header', async () => {
    const r = await t.call('POST', '/api/every', { body: { a: 1 }, headers: sent });
    expect(r.json.headers).to.include({ 'x-wanted': 'yes', 'x-unwanted': 'no' });
  });

  it('reads a repeated header as its first value and an empty one as absent on a route that names them; joins them on others', async () => {
    const lines = ['Content-Type: application/json', 'X-Wanted: first', 'X-Wanted: second', 'X-Request-Id:'];
    const named = await rawPost(t.port, '/api/named', lines, '{}');
    expect(named.status).to.equal(200);
    expect(named.json.headers['x-wanted']).to.equal('first');
    expect(named.json.headers).to.not.have.property('x-request-id');
    const every = await rawPost(t.port, '/api/every', lines, '{}');
    expect(every.json.headers['x-wanted']).to.equal('first, second');
  });

  it('inject sees the headers the socket would give the route', async () => {
    const r = await inject(routes[0]!, { body: { a: 1 }, headers: sent }, t.deps);
    expect(r.json.headers).to.include({ 'x-wanted': 'yes' });
    expect(r.json.headers).to.not.have.property('x-unwanted');
  });
});
