/**
 * The node of the G7 benchmark (frameworks.ts; PERFORMANCE.md "The framework earns its keep"): bench-node's node,
 * serving everything on its uWS edge as usual, whose own compiled `POST /api/daemon/heartbeat` is also served through
 * node:http (on NODE_HTTP_PORT) and Fastify (on FASTIFY_PORT). One process, one set of deps and daemons, one pipeline
 * (http/pipeline.ts: authenticate, decode, validate, handler, then the reply or the `{error, code}` refusal): only
 * the HTTP framework differs. What uWS's edge does around the pipeline for each request (copy the route's headers,
 * choose the request id, run it in its trace, observe its latency, answer with `x-request-id`) the other two do too.
 *   NODE_HTTP_PORT=… FASTIFY_PORT=… TROUPE_MASTER_KEY=… TROUPE_ADMIN_TOKEN=… node --import tsx ops/bench/framework-node.ts
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { node, log } from './bench-node.js';
import { edgeHooksFor } from '../../http/edge-hooks.js';
import { HeaderBag, requestIdFor, type CopiedRequest } from '../../http/exchange.js';
import { httpMetrics } from '../../http/metrics.js';
import { answerRead, compileRoute, isPending, JSON_TYPE, refusal, settle, type SettledReply } from '../../http/pipeline.js';
import { allRoutes } from '../../http/routes.js';
import type { Reply } from '../../http/types.js';
import { EdgeTrace, withTrace } from '../kernel/trace-context.js';

const HEARTBEAT = '/api/daemon/heartbeat';
const route = allRoutes().find((r) => r.method === 'post' && r.path === HEARTBEAT) ?? fail(`the node has no POST ${HEARTBEAT}`);
const hooks = edgeHooksFor(node.deps);
const compiled = compileRoute(route, hooks);
if (compiled.headerNames === undefined) throw new Error(`POST ${HEARTBEAT} no longer names its headers; copy them all here too`);
const headerNames = compiled.headerNames;
// Observed as the edge does, into a registry of its own so the node's /metrics counts only what its edge served,
// with each status's series looked up once, as server.ts `durationOf` does: a `labels()` call per request would
// charge these fronts a cost the edge does not pay.
const latency = httpMetrics(new Registry()).duration;
const latencyByStatus = new Map<number, ReturnType<typeof latency.labels>>();
function latencyOf(status: number): ReturnType<typeof latency.labels> {
  let series = latencyByStatus.get(status);
  if (series === undefined) latencyByStatus.set(status, (series = latency.labels({ method: 'POST', route: HEARTBEAT, status: String(status) })));
  return series;
}

/** The request as uWS's edge copies it (http/exchange.ts copyRequest): the route's headers, an empty one absent. */
function copied(headers: http.IncomingHttpHeaders): CopiedRequest {
  const copy = new HeaderBag() as Record<string, string>;
  for (let i = 0; i < headerNames.length; i++) {
    const name = headerNames[i]!;
    const value = headers[name];
    if (typeof value === 'string' && value !== '') copy[name] = value;
  }
  return { method: 'POST', path: HEARTBEAT, rawQuery: '', rawParams: [], headers: copy, requestId: requestIdFor(copy['x-request-id']) };
}

/** The heartbeat's reply as bytes on the wire, or its refusal; settled at once when nothing had to wait. */
function heartbeat(request: CopiedRequest, rawBody: Buffer, clientAddress: () => string): SettledReply | Promise<SettledReply> {
  const started = performance.now();
  const done = (reply: SettledReply): SettledReply => {
    latencyOf(reply.status).observe((performance.now() - started) / 1000);
    return reply;
  };
  const refused = (err: unknown): SettledReply => {
    const answer = refusal(route, err, log, { reqId: request.requestId, route: HEARTBEAT });
    return done({ status: answer.status, headers: answer.headers, contentType: JSON_TYPE, body: JSON.stringify(answer.body) });
  };
  const sent = (reply: Reply): SettledReply => {
    if (reply.kind === 'sse' || reply.kind === 'chunks') throw new Error(`POST ${HEARTBEAT} answered with a stream`);
    return done(settle(route, reply));
  };
  return withTrace(new EdgeTrace(request.headers.traceparent, request.requestId), () => {
    try {
      const reply = answerRead(compiled, request, clientAddress, rawBody, node.deps, hooks);
      return isPending(reply) ? reply.then(sent).catch(refused) : sent(reply);
    } catch (err) {
      return refused(err);
    }
  });
}

function replyHeaders(request: CopiedRequest, reply: SettledReply): Record<string, string> {
  return { ...reply.headers, ...(reply.contentType ? { 'content-type': reply.contentType } : {}), 'x-request-id': request.requestId };
}

function notFound(res: http.ServerResponse): void {
  res.writeHead(404, { 'content-type': JSON_TYPE }).end(JSON.stringify({ error: 'no such route', code: 'ROUTE_NOT_FOUND' }));
}

const nodeHttp = http.createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== HEARTBEAT) return notFound(res);
  const request = copied(req.headers);
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > compiled.bodyLimit) {
      res.writeHead(413, { 'content-type': JSON_TYPE, connection: 'close' }).end(JSON.stringify({ error: 'body too large', code: 'HTTP_BODY_TOO_LARGE' }));
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (res.headersSent) return;
    const send = (reply: SettledReply) => res.writeHead(reply.status, replyHeaders(request, reply)).end(reply.body);
    const reply = heartbeat(request, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), () => req.socket.remoteAddress ?? '');
    if (isPending(reply)) void reply.then(send);
    else send(reply);
  });
});

// Fastify's own JSON parser is replaced by one that hands over the bytes: the route decodes and validates its body
// itself (as on uWS), so a Fastify parse would be a second one the other two do not make.
const fastify = Fastify({ logger: false });
fastify.removeAllContentTypeParsers();
fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: compiled.bodyLimit }, (_req, body, done) => done(null, body));
fastify.post(HEARTBEAT, (req, res) => {
  const request = copied(req.headers);
  const send = (reply: SettledReply) => res.code(reply.status).headers(replyHeaders(request, reply)).send(reply.body);
  const reply = heartbeat(request, (req.body as Buffer | undefined) ?? Buffer.alloc(0), () => req.ip);
  return isPending(reply) ? reply.then(send) : send(reply);
});

function fail(message: string): never {
  throw new Error(message);
}

function port(name: string): number {
  const value = Number(process.env[name]);
  if (!Number.isInteger(value) || value < 1 || value > 65_535) throw new Error(`${name} must be a port number`);
  return value;
}
await new Promise<void>((resolve, reject) => nodeHttp.once('error', reject).listen(port('NODE_HTTP_PORT'), '127.0.0.1', resolve));
await fastify.listen({ port: port('FASTIFY_PORT'), host: '127.0.0.1' });
log.info({ nodeHttp: port('NODE_HTTP_PORT'), fastify: port('FASTIFY_PORT') }, 'heartbeat also served through node:http and Fastify');
