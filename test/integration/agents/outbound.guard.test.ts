// Invariant: a guarded outbound request reaches only the address that was vetted (a DNS name is pinned to its
// checked address and keeps its Host header), follows redirects only to the same host, gives up at its deadline
// and at its byte cap, and never connects to loopback unless the operator allowed it. Only loopback servers
// started here are ever contacted.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { OutboundGuard, OutboundRefused } from '../../../actors/services/integrations/outbound/index.js';

describe('outbound guard against loopback servers', () => {
  let server: http.Server;
  let port: number;
  const seen: { host: string | undefined; path: string | undefined }[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      seen.push({ host: req.headers.host, path: req.url });
      switch (req.url) {
        case '/ok': res.end('hello'); break;
        case '/same-host': res.writeHead(302, { location: '/ok' }).end(); break;
        case '/other-host': res.writeHead(302, { location: 'http://elsewhere.test/ok' }).end(); break;
        case '/loop': res.writeHead(302, { location: '/loop' }).end(); break;
        case '/big': res.end(Buffer.alloc(4096, 'x')); break;
        case '/big-chunked': res.write(Buffer.alloc(3000, 'x')); res.end(Buffer.alloc(3000, 'y')); break;
        case '/slow': setTimeout(() => res.end('late'), 2000).unref(); break;
        default: res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const loopbackName = async (host: string) => {
    if (host === 'agent.test') return [{ address: '127.0.0.1', family: 4 }];
    throw new Error('ENOTFOUND');
  };

  async function refused(p: Promise<unknown>): Promise<OutboundRefused> {
    try {
      await p;
    } catch (err) {
      expect(err).to.be.instanceOf(OutboundRefused);
      return err as OutboundRefused;
    }
    throw new Error('not refused');
  }

  it('never connects to loopback without an allow entry', async () => {
    const before = seen.length;
    const guard = new OutboundGuard([]);
    expect((await refused(guard.request(`http://127.0.0.1:${port}/ok`))).reason).to.equal('address');
    expect((await refused(new OutboundGuard([], loopbackName).request(`http://agent.test:${port}/ok`))).reason).to.equal('address');
    expect(seen.length).to.equal(before);
  });

  it('connects a name to its vetted address and keeps the Host header', async () => {
    const guard = new OutboundGuard(['127.0.0.1/32'], loopbackName);
    const res = await guard.request(`http://agent.test:${port}/ok`);
    expect(res.status).to.equal(200);
    expect(res.body.toString()).to.equal('hello');
    expect(seen.at(-1)).to.deep.equal({ host: `agent.test:${port}`, path: '/ok' });
  });

  it('follows a same-host redirect and refuses one to another host', async () => {
    const guard = new OutboundGuard(['127.0.0.1'], loopbackName);
    const res = await guard.request(`http://agent.test:${port}/same-host`);
    expect(res.body.toString()).to.equal('hello');
    expect(res.url).to.equal(`http://agent.test:${port}/ok`);
    expect((await refused(guard.request(`http://agent.test:${port}/other-host`))).reason).to.equal('redirect');
    expect((await refused(guard.request(`http://agent.test:${port}/loop`, { maxRedirects: 2 }))).reason).to.equal('redirect');
  });

  it('caps the body by declared length and while streaming', async () => {
    const guard = new OutboundGuard(['127.0.0.1']);
    expect((await refused(guard.request(`http://127.0.0.1:${port}/big`, { maxBytes: 1024 }))).reason).to.equal('too-large');
    expect((await refused(guard.request(`http://127.0.0.1:${port}/big-chunked`, { maxBytes: 4000 }))).reason).to.equal('too-large');
    expect((await guard.request(`http://127.0.0.1:${port}/big`, { maxBytes: 4096 })).body.length).to.equal(4096);
  });

  it('gives up at its deadline', async () => {
    const guard = new OutboundGuard(['127.0.0.1']);
    const started = Date.now();
    expect((await refused(guard.request(`http://127.0.0.1:${port}/slow`, { timeoutMs: 150 }))).reason).to.equal('timeout');
    expect(Date.now() - started).to.be.lessThan(1500);
  });

  it('reports a refused connection as a network failure', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect((await refused(new OutboundGuard(['127.0.0.1']).request(`http://127.0.0.1:${deadPort}/`))).reason).to.equal('network');
  });
});
