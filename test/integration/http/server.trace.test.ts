// Invariant: the edge serves every request inside its W3C trace: what the handler runs after its awaits, and every
// log line it writes, name one traceparent that keeps a valid caller's trace id and flags with a new span, or starts
// a new trace; the trace names the request id; one request's trace never changes however often it is read, and two
// requests never share a span.
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { Writable } from 'node:stream';
import { createLogger } from '../../../ops/kernel/logger.js';
import { currentTrace, isTraceparent } from '../../../ops/kernel/trace-context.js';
import { startHttpServer, type HttpServer } from '../../../http/server.js';
import type { Route } from '../../../http/types.js';
import { call, testDeps, type TestDeps } from '../../support/http.js';

describe('http server: the request trace', () => {
  const lines: Array<Record<string, unknown>> = [];
  const seen: Array<{ first: string | undefined; later: string | undefined; reqId: string | undefined }> = [];
  let server: HttpServer;
  let url: string;

  before(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const log = createLogger({ level: 'info', nodeId: 'n1' }, sink);
    const routes: Route<TestDeps>[] = [{
      method: 'post', path: '/api/traced', auth: 'none', summary: 'reads its trace after awaits and logs',
      async handler(req) {
        await new Promise((r) => setTimeout(r, 5));
        const first = currentTrace()?.traceparent;
        await Promise.resolve();
        log.info({ marker: req.requestId }, 'inside the handler');
        seen.push({ first, later: currentTrace()?.traceparent, reqId: currentTrace()?.reqId });
        return { body: { ok: true } };
      },
    }];
    const deps = testDeps();
    server = await startHttpServer({ routes, deps, host: '127.0.0.1', port: 0, log, metrics: new Registry() });
    url = `http://127.0.0.1:${server.port}`;
  });
  after(async () => { await server.close(1000); });

  it("keeps a caller's trace id and flags with a new span, the same for the whole request and its log lines", async () => {
    const caller = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';
    const res = await call(url, 'POST', '/api/traced', { body: {}, headers: { traceparent: caller } });
    expect(res.status).to.equal(200);
    const s = seen.at(-1)!;
    expect(s.first).to.match(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-00$/);
    expect(s.first!.slice(36, 52)).to.not.equal('00f067aa0ba902b7');
    expect(s.later).to.equal(s.first);
    expect(s.reqId).to.equal(res.headers.get('x-request-id'));
    const line = lines.find((l) => l.marker === s.reqId);
    expect(line?.trace).to.equal(s.first);
    expect(line?.reqId).to.equal(s.reqId);
  });

  it('starts a trace for a request without one or with a malformed one, and never gives two requests one span', async () => {
    for (const headers of [{}, { traceparent: 'nonsense' }, {}] as Array<Record<string, string>>) {
      expect((await call(url, 'POST', '/api/traced', { body: {}, headers })).status).to.equal(200);
    }
    const last = seen.slice(-3);
    for (const s of last) {
      expect(isTraceparent(s.first), String(s.first)).to.equal(true);
      expect(s.later).to.equal(s.first);
    }
    expect(new Set(last.map((s) => s.first!.slice(3, 35))).size).to.equal(3);
    expect(new Set(last.map((s) => s.first!.slice(36, 52))).size).to.equal(3);
  });
});
