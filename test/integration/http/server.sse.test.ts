// Invariant: an event stream is framed per the SSE spec (id/event/data lines, multi-line data split, blank line
// between events), hands the handler the client's Last-Event-ID, keeps idle streams alive with comments, runs close
// callbacks when the client leaves, and cuts off a client that stops reading once its unsent bytes pass the bound —
// memory stays bounded and the server keeps serving — or once it has left the socket full for the stall timeout,
// however little is waiting, so a stalled reader of a quiet stream is dropped in bounded time too.
import { expect } from 'chai';
import net from 'node:net';
import type { Route, SseStream } from '../../../http/types.js';
import { formatSseEvent, type CutOff } from '../../../http/sse.js';
import { startTestServer, type TestDeps, type TestServer } from '../../support/http.js';

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Reads a long stream keeping only its tail, until the tail contains `marker`. */
async function readUntilTail(body: ReadableStream<Uint8Array>, marker: string): Promise<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let tail = '';
  try {
    while (!tail.includes(marker)) {
      const { value, done } = await reader.read();
      if (done) break;
      tail = (tail + decoder.decode(value, { stream: true })).slice(-4096);
    }
  } finally {
    reader.releaseLock();
  }
  return tail;
}

/** Reads an SSE response body until `until` holds for the text so far. */
async function readUntil(body: ReadableStream<Uint8Array>, until: (text: string) => boolean): Promise<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (!until(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    reader.releaseLock();
  }
  return text;
}

const STALL_MS = 400;
type Inspectable = SseStream & { unsentBytes: number; cutOff: CutOff | undefined };

/** Opens a stream on a raw socket that never reads, and fills the kernel's buffers until the server holds bytes. */
async function stalledStream(port: number, opened: SseStream[]): Promise<{ socket: net.Socket; stream: Inspectable }> {
  const count = opened.length;
  const socket = net.connect(port, '127.0.0.1');
  socket.pause();
  socket.on('error', () => {});
  socket.write('GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => opened.length > count, 'the stream to open');
  const stream = opened.at(-1)! as Inspectable;
  // 64 KiB frames until one is refused: a few MiB on loopback, all of it in the kernel, none in the server yet.
  for (let i = 0; i < 4096 && stream.unsentBytes === 0; i++) stream.send({ data: 'z'.repeat(64 * 1024) });
  expect(stream.unsentBytes).to.be.above(0).and.below(256 * 1024);
  return { socket, stream };
}

describe('http server: server-sent events', () => {
  const opened: SseStream[] = [];
  const closedCount = { value: 0 };
  const routes: Route<TestDeps>[] = [
    {
      method: 'get',
      path: '/api/events',
      auth: 'none',
      summary: 'events',
      sse: true,
      handler: async () => ({
        kind: 'sse',
        open: (stream) => {
          opened.push(stream);
          stream.onClose(() => closedCount.value++);
          stream.send({ id: '1', event: 'greeting', data: { resumedFrom: stream.lastEventId ?? null } });
          stream.send({ id: '2', data: 'line one\nline two\r\nline three' });
        },
      }),
    },
    { method: 'get', path: '/healthz', auth: 'none', summary: 'health', handler: async () => ({ body: { ok: true } }) },
  ];

  let t: TestServer;
  before(async () => {
    t = await startTestServer(routes, { sse: { heartbeatMs: 40, maxBufferedBytes: 256 * 1024, stallTimeoutMs: STALL_MS } });
  });
  after(async () => {
    await t.close();
  });

  it('frames events with id, event and one data line per line of data', () => {
    expect(formatSseEvent({ id: '7', event: 'x', data: 'a\nb\r\nc\rd' })).to.equal('id: 7\nevent: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n');
    expect(formatSseEvent({ data: { a: 1 } })).to.equal('data: {"a":1}\n\n');
    expect(formatSseEvent({ id: '1\n\ndata: injected', data: '' })).to.equal('id: 1data: injected\ndata: \n\n');
  });

  it('sends the stream headers and events, and passes Last-Event-ID to the handler', async () => {
    const controller = new AbortController();
    const res = await fetch(`${t.url}/api/events`, { headers: { 'last-event-id': '41' }, signal: controller.signal });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/event-stream');
    expect(res.headers.get('cache-control')).to.equal('no-cache');
    expect(res.headers.get('x-accel-buffering')).to.equal('no');
    expect(res.headers.get('x-request-id')).to.be.a('string');
    const text = await readUntil(res.body!, (s) => s.includes('line three'));
    expect(text).to.include('id: 1\nevent: greeting\ndata: {"resumedFrom":"41"}\n\n');
    expect(text).to.include('id: 2\ndata: line one\ndata: line two\ndata: line three\n\n');
    controller.abort();
  });

  it('sends heartbeat comments while idle', async () => {
    const controller = new AbortController();
    const res = await fetch(`${t.url}/api/events`, { signal: controller.signal });
    const text = await readUntil(res.body!, (s) => s.split('line three')[1]?.includes(':\n\n') === true);
    expect(text.split('line three')[1]).to.include(':\n\n');
    controller.abort();
  });

  it('runs close callbacks and drops the stream from the gauge when the client leaves', async () => {
    const closedBefore = closedCount.value;
    const controller = new AbortController();
    const res = await fetch(`${t.url}/api/events`, { signal: controller.signal });
    await readUntil(res.body!, (s) => s.includes('line three'));
    const stream = opened.at(-1)!;
    expect(stream.closed).to.equal(false);
    controller.abort();
    await waitFor(() => stream.closed, 'the stream to close');
    expect(closedCount.value).to.be.greaterThan(closedBefore);
    expect(stream.send({ data: 'late' })).to.equal(false);
    const open = opened.filter((s) => !s.closed).length;
    expect(await t.deps.metrics.metrics()).to.include(`troupe_http_sse_streams ${open}\n`);
  });

  it('ends the response when the handler closes the stream', async () => {
    const res = await fetch(`${t.url}/api/events`);
    await readUntil(res.body!, (s) => s.includes('line three'));
    opened.at(-1)!.close();
    const rest = await readUntil(res.body!, () => false);
    expect(rest).to.not.include('line three');
  });

  it('cuts off a client that stops reading once its unsent bytes pass the bound, and keeps serving others', async () => {
    const count = opened.length;
    const socket = net.connect(t.port, '127.0.0.1');
    socket.pause(); // never read: the kernel buffers fill, then uWS reports backpressure
    socket.write('GET /api/events HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor(() => opened.length > count, 'the stream to open');
    const stream = opened.at(-1)!;
    const event = { data: 'x'.repeat(64 * 1024) };
    let accepted = 0;
    const maxEvents = 4096; // 256 MiB: far beyond any kernel buffer, so a stream that is never cut off fails here
    while (accepted < maxEvents && stream.send(event)) accepted++;
    expect(accepted).to.be.lessThan(maxEvents);
    expect(stream.closed).to.equal(true);
    expect((stream as unknown as { unsentBytes: number }).unsentBytes).to.equal(0);
    // The server dropped the connection: once the client reads again it drains what was sent and sees the end.
    socket.on('error', () => {});
    const sawEnd = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.resume();
    await sawEnd;
    socket.destroy();
    expect((await t.call('GET', '/healthz')).status).to.equal(200);
    const metrics = await t.deps.metrics.metrics();
    expect(metrics).to.match(/troupe_http_sse_cut_off_total [1-9]/);
    console.log(`      (slow client cut off after ${accepted} events of 64 KiB were accepted)`);
  });

  it('keeps a reader that does keep up, however much is sent', async () => {
    const res = await fetch(`${t.url}/api/events`);
    await readUntil(res.body!, (s) => s.includes('line three'));
    const stream = opened.at(-1)!;
    const total = 400; // 400 × 16 KiB = 6.4 MiB, many times the bound, sent at the pace the reader takes it
    const reading = readUntilTail(res.body!, `"n":${total - 1}}`);
    for (let n = 0; n < total; n++) {
      expect(stream.send({ data: { pad: 'y'.repeat(16 * 1024), n } }), `event ${n}`).to.equal(true);
      if ((stream as unknown as { unsentBytes: number }).unsentBytes > 64 * 1024) {
        await waitFor(() => (stream as unknown as { unsentBytes: number }).unsentBytes === 0, 'the reader to catch up');
      }
    }
    expect(await reading).to.include(`"n":${total - 1}}`);
    expect(stream.closed).to.equal(false);
    stream.close();
  });

  it('cuts off a client that takes nothing for the stall timeout while small events trickle in, under the byte bound', async () => {
    const { socket, stream } = await stalledStream(t.port, opened);
    const started = performance.now();
    while (!stream.closed && performance.now() - started < 5_000) {
      stream.send({ data: { tick: performance.now() } });
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(stream.closed, 'cut off within 5 s').to.equal(true);
    const cut = stream.cutOff!;
    expect(cut.reason).to.equal('stalled');
    expect(cut.stalledMs).to.be.at.least(STALL_MS);
    expect(cut.unsentBytes).to.be.below(256 * 1024);
    expect(performance.now() - started).to.be.below(STALL_MS + 1_000);
    socket.destroy();
  });

  it('cuts off a stalled client of a quiet stream when its keep-alive comment is due', async () => {
    const { socket, stream } = await stalledStream(t.port, opened);
    const started = performance.now();
    await waitFor(() => stream.closed, 'the heartbeat wheel to cut the stalled stream off', 5_000);
    expect(stream.cutOff!.reason).to.equal('stalled');
    expect(performance.now() - started).to.be.at.least(STALL_MS - 5).and.below(STALL_MS + 1_000);
    expect((await t.call('GET', '/healthz')).status).to.equal(200);
    socket.destroy();
  });
});
