import { performance } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import { TroupeError } from '../ops/kernel/errors.js';
import type { Logger } from '../ops/kernel/logger.js';
import type { AuthDeps } from './authenticate.js';
import { ClientAborted, collectBody, EMPTY_BODY, readBody } from './body.js';
import { copyRequest, Exchange, type CopiedRequest } from './exchange.js';
import { httpMetrics } from './metrics.js';
import { defaultSseOptions, parseLastEventId, UwsSseStream, type SseOptions } from './sse.js';
import { HeartbeatWheel } from './sse-heartbeats.js';
import type { Route } from './types.js';
import { clientAddressOf } from './client-address.js';
import { loadUws, type TemplatedApp, type UwsRequest, type UwsResponse, type us_listen_socket } from './uws.js';
import { ChurnSet } from '../ops/kernel/churn-map.js';
import { InFlightList } from './in-flight.js';
import { EdgeTrace, withTrace } from '../ops/kernel/trace-context.js';
import { AdmissionGate, OVERLOAD_RETRY_AFTER_SECONDS, type AdmissionOptions, type ShedReason } from './admission.js';
import { answer, answerRead, compileRoute, isPending, JSON_TYPE, refusal, settle, type CompiledRoute, type EdgeHooks, type ErrorAnswer } from './pipeline.js';
import type { Reply } from './types.js';

export interface HttpServerOptions<D extends AuthDeps> extends EdgeHooks {
  readonly routes: readonly Route<D>[];
  readonly deps: D;
  readonly host: string;
  /** 0 picks a free port (tests); the chosen one is `HttpServer.port`. */
  readonly port: number;
  readonly log: Logger;
  readonly metrics: Registry;
  readonly sse?: Partial<SseOptions>;
  /** Proxies in front that append to X-Forwarded-For (config `trustProxyHops`). @default 0 */
  readonly trustProxyHops?: number;
  /** The budget for write routes (http/admission.ts); without it every request is taken in. */
  readonly admission?: AdmissionOptions;
}

export interface HttpServer {
  readonly port: number;
  /**
   * Stops accepting connections, ends open event streams, waits up to `graceMs` for in-flight requests to be
   * answered, then drops whatever is left. Requests arriving on kept-alive connections meanwhile get 503.
   */
  close(graceMs: number): Promise<void>;
}

const UNMATCHED = '(unmatched)';
const OVERLOAD_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'retry-after': String(OVERLOAD_RETRY_AFTER_SECONDS) });
const overloadBodies: Record<ShedReason, string> = {
  queue_full: overloadBody('queue_full'),
  waited_too_long: overloadBody('waited_too_long'),
};
function overloadBody(reason: ShedReason): string {
  const err = new TroupeError('OVERLOADED', undefined, { reason, retryAfterSeconds: OVERLOAD_RETRY_AFTER_SECONDS });
  return JSON.stringify({ error: err.message, code: err.code, details: err.details });
}
/** Requests slower than this are logged at info even when they succeed. */
const SLOW_REQUEST_SECONDS = 1;

/** Starts one uWS server for a route table; see ops/decisions/0005-http-edge.md for the order of checks. */
export async function startHttpServer<D extends AuthDeps>(options: HttpServerOptions<D>): Promise<HttpServer> {
  const uws = loadUws();
  const { deps, log } = options;
  const metrics = httpMetrics(options.metrics);
  const sseOptions: SseOptions = { ...defaultSseOptions, ...options.sse };
  const heartbeats = new HeartbeatWheel(sseOptions.heartbeatMs);
  const compiled = options.routes.map((route) => compileRoute(route, options));
  const inFlight = new InFlightList<Exchange>();
  const trustProxyHops = options.trustProxyHops ?? 0;
  const streams = new ChurnSet<UwsSseStream>();
  const idleWaiters: Array<() => void> = [];
  let draining = false;
  const gate = options.admission === undefined ? undefined : new AdmissionGate(options.admission, { onShed: (reason) => metrics.shed.labels(reason).inc() });
  const unwatchAdmission = gate === undefined ? undefined : metrics.watchAdmission(() => ({ serving: gate.serving, waiting: gate.waiting }));
  const unwatchInFlight = metrics.watchInFlight(() => inFlight.size);

  const app = uws.App();
  const methodsByPath = new Map<string, string[]>();
  for (const c of compiled) {
    const methods = methodsByPath.get(c.route.path) ?? [];
    const method = c.route.method.toUpperCase();
    if (methods.includes(method)) throw new Error(`route ${method} ${c.route.path} is declared twice`);
    methods.push(method);
    methodsByPath.set(c.route.path, methods);
    register(app, c.route.method, c.route.path, (res, req) => accept(c, res, req));
  }
  // Registered after every method-specific handler: a known path with another method is 405, anything else 404.
  for (const [path, methods] of methodsByPath) {
    const allow = methods.join(', ');
    app.any(path, (res, req) => refuse(res, req, new TroupeError('METHOD_NOT_ALLOWED', undefined, { allow: methods }), path, { allow }));
  }
  app.any('/*', (res, req) => refuse(res, req, new TroupeError('ROUTE_NOT_FOUND'), UNMATCHED, {}));

  /**
   * The duration histogram's child per (method, route, status), looked up once: resolving labels on every
   * observation (hashing a label object) costs more than the rest of the access log. Bounded by the route table
   * times the statuses it answers.
   */
  const durationChildren = new Map<string, Map<string, Map<number, { observe(seconds: number): void }>>>();
  function durationOf(method: string, pattern: string, status: number): { observe(seconds: number): void } {
    // Nested by pattern, method, status: a lookup allocates no key string.
    let byMethod = durationChildren.get(pattern);
    if (byMethod === undefined) durationChildren.set(pattern, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (child === undefined) byStatus.set(status, (child = metrics.duration.labels({ method, route: pattern, status: String(status) })));
    return child;
  }

  const listenSocket = await listen(app, options.host, options.port);
  const port = uws.us_socket_local_port(listenSocket as never);
  log.info({ host: options.host, port }, 'http server listening');

  /** The synchronous part, inside uWS's callback: copy the request, attach onAborted, start reading the body. */
  function accept(c: CompiledRoute<D>, res: UwsResponse, req: UwsRequest): void {
    const started = performance.now();
    const copied = copyRequest(req, c.paramNames.length, c.method, c.headerNames);
    const exchange = new Exchange(res);
    if (draining) {
      finishWithError(exchange, copied, c.route.path, started, shuttingDown(copied, c.route.path));
      return;
    }
    inFlight.add(exchange);
    // The request's trace (W3C traceparent, the caller's trace id kept): every log line and every ask or tell
    // made while serving it carries it, to the node that runs the actor (issue 20). Its ids are drawn when first read.
    const trace = new EdgeTrace(copied.headers.traceparent, copied.requestId);
    const viaGate = gate !== undefined && c.admitted;
    const bodyOptions = { limit: c.bodyLimit, declaredLength: copied.headers['content-length'], onAbort: exchange.onAbort };
    // A write waiting for a slot, or a route that checks the source address before the body, is served as a promise.
    if (viaGate || c.route.limitsSource) {
      const body = c.bodyKind === 'none' ? Promise.resolve(EMPTY_BODY) : collectBody(res, bodyOptions);
      if (viaGate) void admit(c, exchange, copied, body, started, trace);
      else void withTrace(trace, () => serve(c, exchange, copied, body, started, false));
      return;
    }
    if (c.bodyKind === 'none') withTrace(trace, () => serveRead(c, exchange, copied, EMPTY_BODY, started));
    else readBody(res, bodyOptions, (body) => withTrace(trace, () => serveRead(c, exchange, copied, body, started)));
  }

  /** A write: served once the admission gate lets it in, or refused at once (`shed`). */
  async function admit(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, body: Promise<Buffer>, started: number, trace: EdgeTrace): Promise<void> {
    // The body is read while the request waits: a client that aborts meanwhile rejects it before anything awaits
    // it, which Node would report as unhandled (and end the process). Whoever awaits it later still sees the error.
    body.catch(() => undefined);
    try {
      await gate!.enter();
    } catch (err) {
      try {
        await shed(c, exchange, copied, body, started, err);
      } catch (shedErr) {
        log.error({ err: shedErr, reqId: copied.requestId }, 'request pipeline failed');
      }
      finished(exchange);
      return;
    }
    // serve gives the slot back and finishes the exchange.
    await withTrace(trace, () => serve(c, exchange, copied, body, started, true));
  }

  function clientAddress(exchange: Exchange, copied: CopiedRequest): () => string {
    return () => (exchange.clientGone ? '' : clientAddressOf(exchange.res, copied.headers['x-forwarded-for'], trustProxyHops));
  }

  /**
   * A request whose body is in (or could not be read) and that waits for no admission slot: answered before this
   * returns when the pipeline needed no wait (a quiet heartbeat: no promise, so no async hook, no microtask),
   * otherwise once its reply settles.
   */
  function serveRead(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, body: Buffer | Error, started: number): void {
    let reply: Reply | Promise<Reply>;
    try {
      if (body instanceof Error) throw body;
      reply = answerRead(c, copied, clientAddress(exchange, copied), body, deps, options);
    } catch (err) {
      failed(c, exchange, copied, started, err);
      finished(exchange);
      return;
    }
    if (isPending(reply)) {
      void serveReply(c, exchange, copied, reply, started, false);
      return;
    }
    try {
      deliver(c, exchange, copied, reply, started);
    } catch (err) {
      log.error({ err, reqId: copied.requestId }, 'request pipeline failed');
    } finally {
      finished(exchange);
    }
  }

  /** A request read in full before it is served (admitted writes, routes that check the source address first). */
  async function serve(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, bodyBytes: Promise<Buffer>, started: number, viaGate: boolean): Promise<void> {
    // A client that gave up while its request waited for a slot costs nothing more.
    if (viaGate && exchange.clientGone) {
      gate!.leave();
      finished(exchange);
      return accessLog(copied, c.route.path, 499, started);
    }
    await serveReply(c, exchange, copied, answer(c, copied, clientAddress(exchange, copied), bodyBytes, deps, options), started, viaGate);
  }

  /** Waits for the reply, sends it, and finishes the exchange (giving back its admission slot, `viaGate`). */
  async function serveReply(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, pending: Promise<Reply>, started: number, viaGate: boolean): Promise<void> {
    try {
      let reply;
      try {
        reply = await pending;
      } catch (err) {
        return failed(c, exchange, copied, started, err);
      }
      deliver(c, exchange, copied, reply, started);
    } catch (err) {
      log.error({ err, reqId: copied.requestId }, 'request pipeline failed');
    } finally {
      if (viaGate) gate!.leave();
      finished(exchange);
    }
  }

  /** Sends a handler's reply: opens its event stream, or writes its status, headers and body. */
  function deliver(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, reply: Reply, started: number): void {
    if (exchange.clientGone) return accessLog(copied, c.route.path, 499, started);
    if (reply.kind === 'sse') return openStream(exchange, copied, c.route.path, reply.open, started);
    try {
      const settled = settle(c.route, reply);
      exchange.respond(settled.status, settled.headers, settled.contentType, copied.requestId, settled.body);
      accessLog(copied, c.route.path, settled.status, started);
    } catch (err) {
      finishWithError(exchange, copied, c.route.path, started, refusal(undefined, err, log, logContext(copied, c.route.path)));
    }
  }

  /** What the pipeline threw: nothing for a client that is gone, otherwise its `{error, code}` answer. */
  function failed(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, started: number, err: unknown): void {
    if (err instanceof ClientAborted || exchange.clientGone) return accessLog(copied, c.route.path, 499, started);
    finishWithError(exchange, copied, c.route.path, started, refusal(c.route, err, log, logContext(copied, c.route.path)));
  }

  function finished(exchange: Exchange): void {
    inFlight.delete(exchange);
    if (inFlight.size === 0) for (const wake of idleWaiters.splice(0)) wake();
  }

  /**
   * A write refused by the admission gate: answered once its (small) body is in, so the connection stays usable,
   * with a body written once per reason. Not logged one by one: an overloaded node would spend on its log what it
   * saved by refusing; `troupe_http_shed_total` counts them.
   */
  async function shed(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, body: Promise<Buffer>, started: number, err: unknown): Promise<void> {
    const pattern = c.route.path;
    const reason = err instanceof TroupeError ? (err.details?.reason as ShedReason | undefined) : undefined;
    if (reason === undefined) throw err;
    try {
      await body;
    } catch (bodyErr) {
      if (bodyErr instanceof ClientAborted || exchange.clientGone) return accessLog(copied, pattern, 499, started);
      // A body over the route's cap is answered as it would be when admitted (413, connection closed).
      return finishWithError(exchange, copied, pattern, started, refusal(c.route, bodyErr, log, logContext(copied, pattern)));
    }
    if (exchange.clientGone) return accessLog(copied, pattern, 499, started);
    exchange.respond(503, OVERLOAD_HEADERS, JSON_TYPE, copied.requestId, overloadBodies[reason]);
    durationOf(copied.method, pattern, 503).observe((performance.now() - started) / 1000);
  }

  function openStream(exchange: Exchange, copied: CopiedRequest, pattern: string, open: (s: UwsSseStream) => void | Promise<void>, started: number): void {
    // The closures below live as long as the stream: they keep the request id, never the copied request and its
    // headers (a bearer token alone is ~0.5 KB, against a budget of 4 KB per stream, PERFORMANCE.md G6).
    const reqId = copied.requestId;
    const headers = {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-request-id': reqId,
    };
    if (!exchange.startStream(200, headers, ':ok\n\n')) return accessLog(copied, pattern, 499, started);
    accessLog(copied, pattern, 200, started);
    const stream = new UwsSseStream(exchange.res, parseLastEventId(copied.headers['last-event-id']), sseOptions, exchange.onAbort, log, heartbeats);
    if (draining) {
      stream.close();
      return;
    }
    streams.add(stream);
    metrics.sseStreams.inc();
    stream.onClose(() => {
      streams.delete(stream);
      metrics.sseStreams.dec();
      const cut = stream.cutOff;
      if (cut) {
        metrics.sseCutOff.inc();
        log.warn({ reqId, route: pattern, ...cut }, cut.reason === 'backlog' ? 'event stream cut off: client too far behind' : 'event stream cut off: client stopped reading');
      }
    });
    Promise.resolve()
      .then(() => open(stream))
      .catch((err: unknown) => {
        log.error({ err, reqId, route: pattern }, 'event stream handler failed');
        stream.close();
      });
  }

  function refuse(res: UwsResponse, req: UwsRequest, err: TroupeError, pattern: string, headers: Record<string, string>): void {
    const started = performance.now();
    const copied = copyRequest(req, 0);
    const exchange = new Exchange(res);
    const answered = draining ? shuttingDown(copied, pattern) : refusal(undefined, err, log, logContext(copied, pattern), headers);
    finishWithError(exchange, copied, pattern, started, answered);
  }

  /** Requests arriving while the node drains: 503, and the connection closed. */
  function shuttingDown(copied: CopiedRequest, pattern: string): ErrorAnswer {
    return { ...refusal(undefined, new TroupeError('SHUTTING_DOWN'), log, logContext(copied, pattern)), close: true };
  }

  function logContext(copied: CopiedRequest, pattern: string): Record<string, unknown> {
    return { reqId: copied.requestId, method: copied.method, route: pattern };
  }

  function finishWithError(exchange: Exchange, copied: CopiedRequest, pattern: string, started: number, refused: ErrorAnswer): void {
    exchange.respond(refused.status, refused.headers, JSON_TYPE, copied.requestId, JSON.stringify(refused.body), refused.close);
    accessLog(copied, pattern, refused.status, started);
  }

  /**
   * One line per request. Headers are never logged, so neither is Authorization or Cookie. A fast success is logged
   * at debug: at heartbeat rates an info line per request would cost more than the request itself, and the latency
   * histogram already counts it. Refusals and slow requests are what an operator reads, so they stay at info (503s
   * aside, see below).
   */
  function accessLog(copied: CopiedRequest, pattern: string, status: number, started: number): void {
    const seconds = (performance.now() - started) / 1000;
    durationOf(copied.method, pattern, status).observe(seconds);
    // A 503 is a dependency's outage or this node's overload, where it comes for every request: the refusal's own
    // warning (http/errors.ts, one per kind and window) and the histogram say it without a line each.
    const level = (status >= 400 && status !== 503) || seconds >= SLOW_REQUEST_SECONDS ? 'info' : 'debug';
    if (!log.isLevelEnabled(level)) return;
    log[level]({ reqId: copied.requestId, method: copied.method, route: pattern, status, ms: Math.round(seconds * 10_000) / 10 }, 'http request');
  }

  return {
    port,
    async close(graceMs: number): Promise<void> {
      if (draining) return;
      draining = true;
      unwatchAdmission?.();
      unwatchInFlight();
      uws.us_listen_socket_close(listenSocket);
      for (const stream of [...streams]) stream.close();
      if (inFlight.size > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, graceMs);
          idleWaiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      if (inFlight.size > 0) log.warn({ abandoned: inFlight.size }, 'shutdown grace ran out with requests unanswered');
      for (const exchange of inFlight.toArray()) exchange.abandon();
      // Closes idle kept-alive connections too, so nothing of ours keeps the event loop alive.
      (app as TemplatedApp & { close(): void }).close();
      log.info({ port }, 'http server closed');
    },
  };
}

function register(app: TemplatedApp, method: Route['method'], path: string, handler: (res: UwsResponse, req: UwsRequest) => void): void {
  if (method === 'delete') app.del(path, handler);
  else app[method](path, handler);
}

function listen(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (socket) resolve(socket);
      else reject(new Error(`http server could not listen on ${host}:${port}`));
    });
  });
}
