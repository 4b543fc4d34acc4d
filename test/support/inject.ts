import { TroupeError } from '../../ops/kernel/errors.js';
import { silentLogger, type Logger } from '../../ops/kernel/logger.js';
import type { AuthDeps } from '../../http/authenticate.js';
import { collectBody, EMPTY_BODY } from '../../http/body.js';
import { nextRequestId, requestIdFor } from '../../http/exchange.js';
import { answer, compileRoute, JSON_TYPE, refusal, settle, type CompiledRoute, type EdgeHooks, type ErrorAnswer } from '../../http/pipeline.js';
import type { Route } from '../../http/types.js';
import { traceparentFor, withTrace } from '../../ops/kernel/trace-context.js';

/**
 * Requests without a socket: `inject(route, req, deps)` runs a route through the edge's own pipeline
 * (http/pipeline.ts: authenticate, same-origin check, rate limit, body cap, decode, validate, `authorize`, handler,
 * reply or `{error, code}`), the code a request off the wire runs, minus uWS and fetch. What it cannot reach is the
 * socket itself: event streams, connection closing, the bytes of a malformed request line. Tests of those use a
 * real server (test/support/http.ts, startTestNode).
 */
export interface InjectRequest {
  /** Path parameters by name, as the route declares them (`:id`); given decoded, sent percent-encoded. */
  readonly params?: Readonly<Record<string, string>>;
  /** Path parameters exactly as they would appear in the URL (still percent-encoded), in the route's order. */
  readonly rawParams?: readonly string[];
  /** The query string without `?`, or its parameters. */
  readonly query?: string | Readonly<Record<string, string>>;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string;
  /** Encoded as JSON (with `content-type: application/json` unless one is given). */
  readonly body?: unknown;
  /** Sent as-is, no encoding. */
  readonly rawBody?: string | Uint8Array;
  /** The path the request names (the route's pattern with parameters filled in when not given). */
  readonly path?: string;
}

/** The same shape as a socket call's result (test/support/node.ts `CallResult`), so a test can move between them. */
export interface InjectResult {
  readonly status: number;
  readonly headers: Headers;
  readonly json: any;
  readonly text: string;
}

export interface InjectOptions {
  /** The composition root's hooks (http/edge-hooks.ts `edgeHooksFor(deps)` for a node's deps). */
  readonly hooks?: EdgeHooks;
  readonly log?: Logger;
}

const compiledRoutes = new WeakMap<Route<any>, CompiledRoute<any>>();

export async function inject<D extends AuthDeps>(route: Route<D>, req: InjectRequest, deps: D, options: InjectOptions = {}): Promise<InjectResult> {
  const hooks = options.hooks ?? {};
  const log = options.log ?? (deps as { log?: Logger }).log ?? silentLogger();
  let c = compiledRoutes.get(route) as CompiledRoute<D> | undefined;
  if (c === undefined) compiledRoutes.set(route, (c = compileRoute(route, hooks)));

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers ?? {})) headers[name.toLowerCase()] = value;
  if (req.token !== undefined) headers.authorization = `Bearer ${req.token}`;
  let bytes: Buffer | undefined;
  if (req.rawBody !== undefined) bytes = Buffer.from(req.rawBody);
  else if (req.body !== undefined) {
    bytes = Buffer.from(JSON.stringify(req.body));
    headers['content-type'] ??= 'application/json';
  }
  if (bytes !== undefined) headers['content-length'] = String(bytes.length);
  // As the edge copies them: a route that names its headers sees only those (and an empty one as absent).
  if (c.headerNames !== undefined) {
    for (const name of Object.keys(headers)) if (!c.headerNames.includes(name) || headers[name] === '') delete headers[name];
  }
  const requestId = requestIdFor(headers['x-request-id']);
  const rawParams = req.rawParams ?? c.paramNames.map((name) => encodeURIComponent(req.params?.[name] ?? ''));
  const rawQuery = typeof req.query === 'string' ? req.query : new URLSearchParams(req.query ?? {}).toString();
  const incoming = { method: c.method, path: req.path ?? fillPattern(route.path, rawParams), rawQuery, rawParams, headers, requestId };

  // The server's own body reader, fed the whole body as one chunk: the same cap and Content-Length checks.
  const body = c.bodyKind === 'none' || bytes === undefined
    ? Promise.resolve(EMPTY_BODY)
    : collectBody(
        { onData: (deliver) => deliver(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer, true) },
        { limit: c.bodyLimit, declaredLength: headers['content-length'], onAbort: () => undefined },
      );
  let reply;
  try {
    // As the server does: the request's trace (W3C traceparent) rides along every ask and log line made serving it.
    const trace = { traceparent: traceparentFor(headers.traceparent), reqId: requestId };
    reply = await withTrace(trace, () => answer(c!, incoming, () => '127.0.0.1', body, deps, hooks));
  } catch (err) {
    return refused(refusal(route, err, log, { reqId: requestId, method: c.method, route: route.path }), requestId);
  }
  if (reply.kind === 'sse') throw new Error(`${c.method} ${route.path} answers with an event stream: test it through a socket`);
  if (reply.kind === 'chunks') {
    // A streamed body, gathered whole: tests of a download read it as any other reply (the socket path streams it).
    let text = '';
    for await (const chunk of reply.chunks) text += chunk;
    const replyHeaders = new Headers(reply.headers);
    replyHeaders.set('content-type', reply.contentType);
    replyHeaders.set('x-request-id', requestId);
    return { status: reply.status ?? route.successStatus ?? 200, headers: replyHeaders, json: parsed(text), text };
  }
  let settled;
  try {
    settled = settle(route, reply);
  } catch (err) {
    return refused(refusal(undefined, err, log, { reqId: requestId, method: c.method, route: route.path }), requestId);
  }
  const replyHeaders = new Headers(settled.headers);
  if (settled.contentType !== undefined) replyHeaders.set('content-type', settled.contentType);
  replyHeaders.set('x-request-id', requestId);
  const text = settled.body === undefined ? '' : typeof settled.body === 'string' ? settled.body : settled.body.toString('utf8');
  return { status: settled.status, headers: replyHeaders, json: parsed(text), text };
}

function refused(answered: ErrorAnswer, requestId: string): InjectResult {
  const headers = new Headers(answered.headers);
  headers.set('content-type', JSON_TYPE);
  headers.set('x-request-id', requestId);
  if (answered.close) headers.set('connection', 'close');
  const text = JSON.stringify(answered.body);
  return { status: answered.status, headers, json: answered.body, text };
}

function parsed(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

function fillPattern(pattern: string, rawParams: readonly string[]): string {
  let i = 0;
  return pattern.replace(/:\w+/g, () => rawParams[i++] ?? '');
}

/**
 * Requests by method and URL path, as a client writes them, matched against a route table the way uWS matches
 * (a literal segment wins over a `:parameter`); a known path with another method is 405, an unknown one 404.
 */
export function injector<D extends AuthDeps>(routes: readonly Route<D>[], deps: D, options: InjectOptions = {}) {
  const log = options.log ?? (deps as { log?: Logger }).log ?? silentLogger();
  const table = routes.map((route) => ({ route, segments: route.path.split('/') }));
  return async (method: string, url: string, req: Omit<InjectRequest, 'params' | 'rawParams' | 'path'> & { query?: never } = {}): Promise<InjectResult> => {
    const [path = '', query = ''] = url.split(/\?(.*)/s);
    const segments = path.split('/');
    let best: { route: Route<D>; rawParams: string[]; rank: string } | undefined;
    const allowed: string[] = [];
    for (const entry of table) {
      if (entry.segments.length !== segments.length) continue;
      const rawParams: string[] = [];
      let rank = '';
      let matches = true;
      for (let i = 0; i < segments.length && matches; i++) {
        const declared = entry.segments[i]!;
        if (declared.startsWith(':')) {
          if (segments[i] === '') matches = false;
          rawParams.push(segments[i]!);
          rank += '1';
        } else {
          matches = declared === segments[i];
          rank += '0';
        }
      }
      if (!matches) continue;
      if (entry.route.method !== method.toLowerCase()) {
        allowed.push(entry.route.method.toUpperCase());
        continue;
      }
      if (best === undefined || rank < best.rank) best = { route: entry.route, rawParams, rank };
    }
    if (best === undefined) {
      const err = allowed.length > 0 ? new TroupeError('METHOD_NOT_ALLOWED', undefined, { allow: allowed }) : new TroupeError('ROUTE_NOT_FOUND');
      return refused(refusal(undefined, err, log, {}, allowed.length > 0 ? { allow: allowed.join(', ') } : {}), nextRequestId());
    }
    return inject(best.route, { ...req, rawParams: best.rawParams, path, query }, deps, options);
  };
}
