// Invariant: close(graceMs) stops accepting connections at once, ends open event streams, lets an in-flight request
// finish and be answered within the grace period, and abandons one that outlasts it instead of waiting forever.
import { expect } from 'chai';
import type { Route } from '../../../http/types.js';
import { startTestServer, type TestDeps } from '../../support/http.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('http server: graceful close', () => {
  it('answers an in-flight request, ends streams and refuses new connections', async () => {
    const release = deferred();
    const entered = deferred();
    let streamClosed = false;
    const routes: Route<TestDeps>[] = [
      {
        method: 'get',
        path: '/slow',
        auth: 'none',
        summary: 'slow',
        handler: async () => {
          entered.resolve();
          await release.promise;
          return { body: { finished: true } };
        },
      },
      { method: 'get', path: '/events', auth: 'none', summary: 'events', sse: true, handler: async () => ({ kind: 'sse', open: (s) => s.onClose(() => (streamClosed = true)) }) },
    ];
    const t = await startTestServer(routes);
    const stream = await fetch(`${t.url}/events`);
    const streamEnded = stream.text();
    const inFlight = t.call('GET', '/slow');
    await entered.promise;

    let closed = false;
    const closing = t.server.close(5000).then(() => (closed = true));
    await streamEnded;
    expect(streamClosed).to.equal(true);
    expect(closed).to.equal(false);
    // No new connections while draining.
    const refused = await fetch(`${t.url}/slow`, { headers: { connection: 'close' } }).then(() => 'answered', (e: Error) => (e.cause as { code?: string } | undefined)?.code ?? e.message);
    expect(refused).to.equal('ECONNREFUSED');

    release.resolve();
    const answer = await inFlight;
    expect(answer.status).to.equal(200);
    expect(answer.json).to.deep.equal({ finished: true });
    await closing;
    expect(closed).to.equal(true);
  });

  it('gives up on a request that outlasts the grace period', async () => {
    const entered = deferred();
    const never = new Promise<never>(() => {});
    const t = await startTestServer([
      { method: 'get', path: '/stuck', auth: 'none', summary: 'stuck', handler: async () => { entered.resolve(); return never; } },
    ]);
    const stuck = t.call('GET', '/stuck').then(() => 'answered', () => 'dropped');
    await entered.promise;
    const started = Date.now();
    await t.server.close(100);
    expect(Date.now() - started).to.be.lessThan(2000);
    expect(await stuck).to.equal('dropped');
  });
});
