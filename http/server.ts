import { performance } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import { TroupeError } from '../ops/kernel/errors.js';
import type { Logger } from '../ops/kernel/logger.js';
import { authenticate, type AuthDeps } from './authenticate.js';
import { assertSameOriginWrite } from './csrf.js';
import { ClientAborted, collectBody, decodeBody, DEFAULT_BODY_LIMIT, EMPTY_BODY } from './body.js';
import { toErrorReply } from './errors.js';
import { assertSafeHeaders, copyRequest, Exchange, HeaderBag, type CopiedRequest } from './exchange.js';
import { httpMetrics, type HttpMetrics } from './metrics.js';
import { defaultSseOptions, parseLastEventId, UwsSseStream, type SseOptions } from './sse.js';
import { HeartbeatWheel } from './sse-heartbeats.js';
import type { BodyKind, HttpRequest, RateLimitKind, Reply, Route } from './types.js';
import type { Principal } from '../actors/identity/principal.js';
import { clientAddressOf } from './client-address.js';
import { loadUws, type TemplatedApp, type UwsRequest, type UwsResponse, type us_listen_socket } from './uws.js';
import { compileRouteValidators, validateBody, validateQuery, type RouteValidators } from './validation.js';
import { ChurnSet } from '../ops/kernel/churn-map.js';
import { traceparentFor, withTrace } from '../ops/kernel/trace-context.js';

export interface HttpServerOptions<D extends AuthDeps> {
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
  /**
   * Counts a request against the caller's per-credential rate limit of `kind`; throws RATE_LIMITED (429 with
   * Retry-After) when it is used up. Called after authentication, before the body is decoded. @default none
   */
  readonly limitRequest?: (kind: RateLimitKind, principal: Principal) => Promise<void>;
  /** Throws RATE_LIMITED when a source address is over its limit of refusals (routes with `limitsSource`). */
  readonly assertSourceOpen?: (address: string) => Promise<void>;
}

export interface HttpServer {
  readonly port: number;
  /**
   * Stops accepting connections, ends open event streams, waits up to `graceMs` for in-flight requests to be
   * answered, then drops whatever is left. Requests arriving on kept-alive connections meanwhile get 503.
   */
  close(graceMs: number): Promise<void>;
}

const JSON_TYPE = 'application/json; charset=utf-8';
/** Who the per-credential limits apply to: people and their tools. Workers (runtime tokens) are trusted for their org. */
const limitedKinds: ReadonlySet<string> = new Set(['user', 'apiKey', 'machine']);
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
const UNMATCHED = '(unmatched)';
/** Requests slower than this are logged at info even when they succeed. */
const SLOW_REQUEST_SECONDS = 1;

interface CompiledRoute<D> {
  readonly route: Route<D>;
  /** Upper case, as requests carry it: a matched route knows its method without asking uWS. */
  readonly method: string;
  readonly paramNames: readonly string[];
  readonly bodyKind: BodyKind;
  readonly bodyLimit: number;
  readonly validators: RouteValidators;
  readonly rateLimit: RateLimitKind | undefined;
}

/** Starts one uWS server for a route table; see ops/decisions/0005-http-edge.md for the order of checks. */
export async function startHttpServer<D extends AuthDeps>(options: HttpServerOptions<D>): Promise<HttpServer> {
  const uws = loadUws();
  const { deps, log } = options;
  const metrics = httpMetrics(options.metrics);
  const sseOptions: SseOptions = { ...defaultSseOptions, ...options.sse };
  const heartbeats = new HeartbeatWheel(sseOptions.heartbeatMs);
  const compiled = options.routes.map(compileRoute);
  const inFlight = new ChurnSet<Exchange>();
  const trustProxyHops = options.trustProxyHops ?? 0;
  const streams = new ChurnSet<UwsSseStream>();
  const idleWaiters: Array<() => void> = [];
  let draining = false;

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

  function compileRoute(route: Route<D>): CompiledRoute<D> {
    const bodyKind = route.bodyKind ?? (route.method === 'post' || route.method === 'put' || route.method === 'patch' ? 'json' : 'none');
    return {
      route,
      method: route.method.toUpperCase(),
      paramNames: route.path.split('/').filter((s) => s.startsWith(':')).map((s) => s.slice(1)),
      bodyKind,
      bodyLimit: route.bodyLimit ?? DEFAULT_BODY_LIMIT,
      validators: compileRouteValidators(route),
      rateLimit: route.rateLimit === 'none' ? undefined : route.rateLimit ?? (route.method === 'get' ? undefined : 'write'),
    };
  }

  /** The synchronous part, inside uWS's callback: copy the request, attach onAborted, start reading the body. */
  function accept(c: CompiledRoute<D>, res: UwsResponse, req: UwsRequest): void {
    const started = performance.now();
    const copied = copyRequest(req, c.paramNames.length, c.method);
    const exchange = new Exchange(res);
    if (draining) {
      finishWithError(exchange, copied, c.route.path, started, new TroupeError('SHUTTING_DOWN'), {}, true);
      return;
    }
    inFlight.add(exchange);
    metrics.inFlight.inc();
    const body =
      c.bodyKind === 'none'
        ? Promise.resolve(EMPTY_BODY)
        : collectBody(res, { limit: c.bodyLimit, declaredLength: copied.headers['content-length'], onAbort: exchange.onAbort });
    void run(c, exchange, copied, body, started);
  }

  /** One async frame per request for the pipeline and its bookkeeping (no `.catch().finally()` chain of closures). */
  async function run(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, body: Promise<Buffer>, started: number): Promise<void> {
    try {
      // The request's trace (W3C traceparent, the caller's trace id kept): every log line and every ask or tell
      // made while serving it carries it, to the node that runs the actor (issue 20).
      const trace = { traceparent: traceparentFor(copied.headers.traceparent), reqId: copied.requestId };
      await withTrace(trace, () => serve(c, exchange, copied, body, started));
    } catch (err) {
      log.error({ err, reqId: copied.requestId }, 'request pipeline failed');
    } finally {
      inFlight.delete(exchange);
      metrics.inFlight.dec();
      if (inFlight.size === 0) for (const wake of idleWaiters.splice(0)) wake();
    }
  }

  async function serve(c: CompiledRoute<D>, exchange: Exchange, copied: CopiedRequest, bodyBytes: Promise<Buffer>, started: number): Promise<void> {
    let reply: Reply;
    const clientAddress = () => (exchange.clientGone ? '' : clientAddressOf(exchange.res, copied.headers['x-forwarded-for'], trustProxyHops));
    try {
      if (c.route.limitsSource && options.assertSourceOpen !== undefined) {
        try {
          await options.assertSourceOpen(clientAddress());
        } catch (err) {
          // The body is left unread: the refusal closes the connection, and the reader's outcome goes nowhere.
          bodyBytes.catch(() => undefined);
          throw err;
        }
      }
      const rawBody = await bodyBytes;
      const principal = await authenticate(c.route.auth, { authorization: copied.headers.authorization, cookie: copied.headers.cookie }, deps);
      assertSameOriginWrite(copied.method, copied.headers, principal);
      if (c.rateLimit !== undefined && options.limitRequest !== undefined && principal !== undefined && limitedKinds.has(principal.kind)) {
        await options.limitRequest(c.rateLimit, principal);
      }
      const body = decodeBody(c.bodyKind, copied.headers['content-type'], rawBody);
      const query = new URLSearchParams(copied.rawQuery);
      validateQuery(c.validators.query, query, c.validators.integerParams);
      validateBody(c.validators.body, body);
      const request: HttpRequest = {
        method: copied.method,
        path: copied.path,
        params: decodeParams(c.paramNames, copied.rawParams),
        query,
        headers: copied.headers,
        body,
        rawBody,
        requestId: copied.requestId,
        principal,
        clientAddress,
      };
      reply = await c.route.handler(request, deps);
    } catch (err) {
      if (err instanceof ClientAborted || exchange.clientGone) return accessLog(copied, c.route.path, 499, started);
      // A refusal before the body was read to its end (413) must close the connection: the rest of it is unread.
      const mustClose = err instanceof TroupeError && (err.code === 'HTTP_BODY_TOO_LARGE' || (err.code === 'RATE_LIMITED' && c.route.limitsSource === true));
      const tooLarge = err instanceof TroupeError && err.code === 'HTTP_BODY_TOO_LARGE';
      const answered = tooLarge && c.route.bodyTooLarge !== undefined ? new TroupeError(c.route.bodyTooLarge, err.message) : err;
      return finishWithError(exchange, copied, c.route.path, started, answered, {}, mustClose);
    }
    if (exchange.clientGone) return accessLog(copied, c.route.path, 499, started);
    if (reply.kind === 'sse') return openStream(exchange, copied, c.route.path, reply.open, started);
    try {
      const status = reply.status ?? c.route.successStatus ?? 200;
      if (!Number.isInteger(status) || status < 200 || status > 599) throw new Error(`handler returned status ${status}`);
      // Most replies (every heartbeat) set no headers of their own: nothing to copy or check then. The edge's own
      // content-type and x-request-id replace a handler's (written after them, so they are dropped from its copy).
      let headers = NO_HEADERS;
      if (reply.headers !== undefined) {
        const own: Record<string, string> = { ...reply.headers };
        delete own['x-request-id'];
        if (status !== 204 && status !== 304) delete own['content-type'];
        assertSafeHeaders(own);
        headers = own;
      }
      if (status === 204 || status === 304) {
        exchange.respond(status, headers, undefined, copied.requestId, undefined);
      } else if (reply.kind === 'text') {
        assertSafeHeaders({ 'content-type': reply.contentType });
        exchange.respond(status, headers, reply.contentType, copied.requestId, reply.body);
      } else {
        exchange.respond(status, headers, JSON_TYPE, copied.requestId, JSON.stringify(reply.body) ?? 'null');
      }
      accessLog(copied, c.route.path, status, started);
    } catch (err) {
      finishWithError(exchange, copied, c.route.path, started, err, {}, false);
    }
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
    finishWithError(exchange, copied, pattern, started, draining ? new TroupeError('SHUTTING_DOWN') : err, headers, draining);
  }

  function finishWithError(
    exchange: Exchange,
    copied: CopiedRequest,
    pattern: string,
    started: number,
    err: unknown,
    extraHeaders: Record<string, string>,
    closeConnection: boolean,
  ): void {
    const { status, body } = toErrorReply(err, log, { reqId: copied.requestId, method: copied.method, route: pattern });
    // A refusal the caller can retry says when: the rate limiter's wait, or a second for a dependency that is down.
    const retryAfter = status === 429 ? body.details?.retryAfterSeconds : status === 503 ? (body.details?.retryAfterSeconds ?? 1) : undefined;
    const headers = typeof retryAfter === 'number' ? { ...extraHeaders, 'retry-after': String(retryAfter) } : extraHeaders;
    exchange.respond(status, headers, JSON_TYPE, copied.requestId, JSON.stringify(body), closeConnection);
    accessLog(copied, pattern, status, started);
  }

  /**
   * One line per request. Headers are never logged, so neither is Authorization or Cookie. A fast success is logged
   * at debug: at heartbeat rates an info line per request would cost more than the request itself, and the latency
   * histogram already counts it. Refusals and slow requests are what an operator reads, so they stay at info.
   */
  function accessLog(copied: CopiedRequest, pattern: string, status: number, started: number): void {
    const seconds = (performance.now() - started) / 1000;
    durationOf(copied.method, pattern, status).observe(seconds);
    const level = status >= 400 || seconds >= SLOW_REQUEST_SECONDS ? 'info' : 'debug';
    if (!log.isLevelEnabled(level)) return;
    log[level]({ reqId: copied.requestId, method: copied.method, route: pattern, status, ms: Math.round(seconds * 10_000) / 10 }, 'http request');
  }

  return {
    port,
    async close(graceMs: number): Promise<void> {
      if (draining) return;
      draining = true;
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
      for (const exchange of inFlight) exchange.abandon();
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

/** uWS hands parameters over still percent-encoded; a malformed escape is the client's error, not ours. */
function decodeParams(names: readonly string[], raw: readonly string[]): Record<string, string> {
  const params = new HeaderBag() as Record<string, string>;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const value = raw[i] ?? '';
    // Most parameters (ids) hold no escape at all: nothing to decode, nothing that can be malformed.
    if (value.indexOf('%') < 0) {
      params[name] = value;
      continue;
    }
    try {
      params[name] = decodeURIComponent(value);
    } catch {
      throw new TroupeError('VALIDATION_FAILED', `path parameter '${name}' is not valid percent-encoding`, { field: name });
    }
  }
  return params;
}
