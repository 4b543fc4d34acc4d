// Invariant: a chunked reply (a download such as a transcript's NDJSON) is sent a chunk at a time with its status,
// content type and headers, and its producer runs only as fast as the client reads: a client that stops reading
// leaves the producer waiting (the node holds about one chunk more than the socket, never the whole body); a client
// that goes away stops the producer; a producer failing after the first byte cuts the connection, never a 200 with a
// silently short body.
import { expect } from 'chai';
import net from 'node:net';
import type { Route } from '../../../http/types.js';
import { startTestServer, type TestDeps, type TestServer } from '../../support/http.js';

const CHUNK = 'x'.repeat(64 * 1024 - 1) + '\n';
const CHUNKS = 400; // 25.6 MB in all

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('http server: chunked replies', () => {
  let t: TestServer;
  let produced = 0;
  let finished = false;
  before(async () => {
    const routes: Route<TestDeps>[] = [
      {
        method: 'get', path: '/download', auth: 'none', summary: 'a long download',
        handler: () => ({
          kind: 'chunks', contentType: 'application/x-ndjson', headers: { 'content-disposition': 'attachment; filename="d.ndjson"' },
          chunks: (async function* () {
            produced = 0;
            finished = false;
            try {
              for (let i = 0; i < CHUNKS; i++) {
                produced++;
                yield CHUNK;
              }
            } finally {
              finished = true;
            }
          })(),
        }),
      },
      {
        method: 'get', path: '/slow', auth: 'none', summary: 'a producer that waits between chunks, as a database read does',
        handler: () => ({
          kind: 'chunks', contentType: 'application/x-ndjson',
          chunks: (async function* () {
            for (let i = 0; i < 150; i++) {
              await new Promise((r) => setTimeout(r, i % 3));
              yield CHUNK;
            }
          })(),
        }),
      },
      {
        method: 'get', path: '/broken', auth: 'none', summary: 'fails after the first chunk',
        handler: () => ({
          kind: 'chunks', contentType: 'text/plain',
          chunks: (async function* () {
            yield 'first\n';
            throw new Error('the database went away');
          })(),
        }),
      },
    ];
    t = await startTestServer(routes);
  });
  after(() => t.close());

  it('sends every chunk in order with the reply headers', async () => {
    const res = await fetch(`${t.url}/download`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/x-ndjson');
    expect(res.headers.get('content-disposition')).to.equal('attachment; filename="d.ndjson"');
    expect(res.headers.get('x-request-id')).to.be.a('string');
    const text = await res.text();
    expect(text.length).to.equal(CHUNKS * CHUNK.length);
    expect(finished).to.equal(true);
  });

  it('finishes when the producer is slower than the socket at times and faster at others', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${t.url}/slow`);
      expect((await res.text()).length).to.equal(150 * CHUNK.length);
    }
  });

  it('finishes for a client reading in fits and starts from a producer that waits', async () => {
    const socket = net.connect(t.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let received = 0;
    let text = '';
    socket.on('data', (d: Buffer) => { received += d.length; text = (text + d.toString('latin1')).slice(-16); });
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const deadline = Date.now() + 15_000;
    // Reads 15 ms out of every 40 until the terminating chunk arrives.
    while (!text.endsWith('0\r\n\r\n')) {
      if (Date.now() > deadline) throw new Error(`stalled after ${received} bytes`);
      socket.pause();
      await new Promise((r) => setTimeout(r, 25));
      socket.resume();
      await new Promise((r) => setTimeout(r, 15));
    }
    expect(received).to.be.greaterThan(150 * CHUNK.length);
    socket.destroy();
  });

  it('produces only as fast as a client reads, and stops when the client goes away', async () => {
    const socket = net.connect(t.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('GET /download HTTP/1.1\r\nHost: x\r\n\r\n');
    // The client reads nothing: the producer must stop far short of the whole body.
    socket.pause();
    await new Promise((r) => setTimeout(r, 500));
    const stalledAt = produced;
    expect(stalledAt, 'chunks produced while the client read nothing').to.be.below(CHUNKS / 4);
    await new Promise((r) => setTimeout(r, 300));
    expect(produced, 'no progress without reading').to.be.at.most(stalledAt + 1);
    socket.destroy();
    await waitFor(() => finished, 'the producer is stopped');
    expect(produced).to.be.below(CHUNKS);
  });

  it('cuts the connection when the producer fails after the first chunk', async () => {
    let failed = false;
    try {
      const res = await fetch(`${t.url}/broken`);
      expect(res.status).to.equal(200);
      await res.text();
    } catch {
      failed = true;
    }
    expect(failed, 'the client sees a broken body, not a complete one').to.equal(true);
    await waitFor(() => t.lines.some((l) => String(l.msg).includes('streamed reply failed')), 'the failure logged');
  });
});
