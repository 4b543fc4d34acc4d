import { TroupeError } from '../ops/kernel/errors.js';
import type { Logger } from '../ops/kernel/logger.js';
import type { Principal } from '../actors/services/identity/principal.js';
import type { ResourceRef } from '../actors/services/identity/ports.js';
import { authenticate, memoisedPrincipal, type AuthDeps } from './authenticate.js';
import { assertSameOriginWrite } from './csrf.js';
import { decodeBody, DEFAULT_BODY_LIMIT } from './body.js';
import { toErrorReply, type ErrorBody } from './errors.js';
import { assertSafeHeaders, HeaderBag, headersToCopy, type CopiedRequest } from './exchange.js';
import { orgPrincipal } from './principal.js';
import type { BodyKind, HttpRequest, RateLimitKind, Reply, Route, RouteCall } from './types.js';
import type { WorkerRequestKind } from '../storage/rate-limits.js';
import { compileRouteValidators, validateBody, validateQuery, type RouteValidators } from './validation.js';

/**
 * The route pipeline, the same for a request off the socket (http/server.ts) and one a test injects
 * (test/support/inject.ts): authenticate, same-origin check, rate limit, decode, validate, the route's `authorize`
 * (find, then Cedar), the handler; then the reply's status and headers, or the error mapped to `{error, code}`.
 * Nothing here knows uWS, so a test that needs no socket runs exactly what a client would reach.
 */

/** What the composition root lends the edge (ops/node.ts); absent in edge-only tests. */
export interface EdgeHooks {
  /**
   * Counts a request against the caller's per-credential rate limit of `kind`; throws RATE_LIMITED (429 with
   * Retry-After) when it is used up. Called after authentication, before the body is decoded.
   */
  readonly limitRequest?: (kind: RateLimitKind, principal: Principal) => Promise<void>;
  /**
   * Counts a worker's request of agent output by its size in bytes (routes with rateLimit 'workerOutput'); throws
   * RATE_LIMITED when its budget is used up. Called before the body is decoded, so a refusal costs no parse.
   */
  readonly limitWorkerOutput?: (workerId: string, bytes: number) => Promise<void>;
  /**
   * Counts a worker's request against its per-node limit of `kind`; throws RATE_LIMITED (429 with Retry-After) when
   * it is used up. Synchronous, so the quiet heartbeat stays without a promise (decision 0082).
   */
  readonly limitWorker?: (kind: WorkerRequestKind, workerId: string) => void;
  /** Throws RATE_LIMITED when a source address is over its limit of refusals (routes with `limitsSource`). */
  readonly assertSourceOpen?: (address: string) => Promise<void>;
  /** Cedar: throws AUTHZ_DENIED unless `principal` may do `action` on `resource`. Needed by routes that declare `authorize`. */
  readonly authorize?: (principal: Principal, action: string, resource: ResourceRef) => Promise<unknown>;
}

export interface CompiledRoute<D> {
  readonly route: Route<D>;
  /** Upper case, as requests carry it: a matched route knows its method without asking uWS. */
  readonly method: string;
  readonly paramNames: readonly string[];
  readonly bodyKind: BodyKind;
  readonly bodyLimit: number;
  readonly validators: RouteValidators;
  readonly rateLimit: RateLimitKind | undefined;
  /** Counts against the node's admission budget for writes. */
  readonly admitted: boolean;
  /** The headers copied out of uWS by name, or undefined for every header (`Route.readsHeaders`). */
  readonly headerNames: readonly string[] | undefined;
}

/** Who the per-credential limits apply to: people and their tools. Workers (runtime tokens) have their own (`workerLimits`). */
const limitedKinds: ReadonlySet<string> = new Set(['user', 'apiKey', 'machine']);
/** Which of a worker's limits a route's kind counts against; 'workerOutput' is counted in bytes apart. */
const workerLimits: Readonly<Record<Exclude<RateLimitKind, 'workerOutput'>, WorkerRequestKind>> = {
  workerHeartbeat: 'heartbeat', workerPoll: 'poll', write: 'report', dispatch: 'report',
};
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
const NOTHING_FOUND: RouteCall<undefined> = Object.freeze({ found: undefined });

export function compileRoute<D>(route: Route<D>, hooks: EdgeHooks): CompiledRoute<D> {
  if (route.authorize !== undefined && hooks.authorize === undefined) {
    // Failing closed: a route that declares a Cedar check is never served without the authorizer to make it.
    throw new Error(`route ${route.method.toUpperCase()} ${route.path} declares authorize, but the edge has no authorizer`);
  }
  if (route.authorize !== undefined && (route.auth === 'none' || route.auth === 'admin')) {
    throw new Error(`route ${route.method.toUpperCase()} ${route.path}: authorize needs an org credential, not auth '${route.auth}'`);
  }
  const bodyKind = route.bodyKind ?? (route.method === 'post' || route.method === 'put' || route.method === 'patch' ? 'json' : 'none');
  return {
    route,
    method: route.method.toUpperCase(),
    paramNames: route.path.split('/').filter((s) => s.startsWith(':')).map((s) => s.slice(1)),
    bodyKind,
    bodyLimit: route.bodyLimit ?? DEFAULT_BODY_LIMIT,
    validators: compileRouteValidators(route),
    rateLimit: route.rateLimit === 'none' ? undefined : route.rateLimit ?? (route.method === 'get' ? undefined : 'write'),
    admitted: route.method !== 'get' && route.admission !== 'exempt',
    headerNames: headersToCopy(route.readsHeaders, route.sse === true),
  };
}

/** A request as the transport hands it over (uWS's copy, or a test's for `inject`): nothing decoded yet. */
export type IncomingRequest = CopiedRequest;

/** Runs a request through the route and returns the handler's reply; throws what the client is to be answered. */
export async function answer<D extends AuthDeps>(
  c: CompiledRoute<D>, incoming: IncomingRequest, clientAddress: () => string, bodyBytes: Promise<Buffer>, deps: D, hooks: EdgeHooks,
): Promise<Reply> {
  if (c.route.limitsSource && hooks.assertSourceOpen !== undefined) {
    try {
      await hooks.assertSourceOpen(clientAddress());
    } catch (err) {
      // The body is left unread: the refusal closes the connection, and the reader's outcome goes nowhere.
      bodyBytes.catch(() => undefined);
      throw err;
    }
  }
  return answerRead(c, incoming, clientAddress, await bodyBytes, deps, hooks);
}

/**
 * The pipeline once the body is in (for a route without `limitsSource`, the whole of it), waiting only where a
 * step must: a memoised credential, no per-credential limit, no Cedar check and a handler that answers at once (a
 * quiet heartbeat) give the reply itself, with no promise made on the way. Every promise runs the trace's async
 * hook and an allocation, which were a fifth of the heartbeat's CPU. Throws at once what it can refuse at once.
 */
export function answerRead<D extends AuthDeps>(
  c: CompiledRoute<D>, incoming: IncomingRequest, clientAddress: () => string, rawBody: Buffer, deps: D, hooks: EdgeHooks,
): Reply | Promise<Reply> {
  const mode = c.route.auth;
  if (mode === 'none') return afterAuthentication(c, incoming, clientAddress, rawBody, deps, hooks, undefined);
  const presented = { authorization: incoming.headers.authorization, cookie: incoming.headers.cookie };
  const memoised = memoisedPrincipal(mode, presented, deps);
  if (memoised !== undefined) return afterAuthentication(c, incoming, clientAddress, rawBody, deps, hooks, memoised);
  return authenticate(mode, presented, deps).then((principal) => afterAuthentication(c, incoming, clientAddress, rawBody, deps, hooks, principal));
}

function afterAuthentication<D extends AuthDeps>(
  c: CompiledRoute<D>, incoming: IncomingRequest, clientAddress: () => string, rawBody: Buffer, deps: D, hooks: EdgeHooks,
  principal: Principal | undefined,
): Reply | Promise<Reply> {
  assertSameOriginWrite(incoming.method, incoming.headers, principal);
  if (c.rateLimit === 'workerOutput') {
    if (principal?.kind === 'runtime' && hooks.limitWorkerOutput !== undefined) {
      return hooks.limitWorkerOutput(principal.workerId, rawBody.length).then(() => handle(c, incoming, clientAddress, rawBody, deps, hooks, principal));
    }
    return handle(c, incoming, clientAddress, rawBody, deps, hooks, principal);
  }
  if (principal?.kind === 'runtime') {
    if (c.rateLimit !== undefined && hooks.limitWorker !== undefined) hooks.limitWorker(workerLimits[c.rateLimit], principal.workerId);
    return handle(c, incoming, clientAddress, rawBody, deps, hooks, principal);
  }
  const perCredential = c.rateLimit === 'write' || c.rateLimit === 'dispatch' ? c.rateLimit : undefined;
  if (perCredential !== undefined && hooks.limitRequest !== undefined && principal !== undefined && limitedKinds.has(principal.kind)) {
    return hooks.limitRequest(perCredential, principal).then(() => handle(c, incoming, clientAddress, rawBody, deps, hooks, principal));
  }
  return handle(c, incoming, clientAddress, rawBody, deps, hooks, principal);
}

/** Decode, validate, the route's `authorize` (find, then Cedar) when it declares one, the handler. */
function handle<D extends AuthDeps>(
  c: CompiledRoute<D>, incoming: IncomingRequest, clientAddress: () => string, rawBody: Buffer, deps: D, hooks: EdgeHooks,
  principal: Principal | undefined,
): Reply | Promise<Reply> {
  const { route } = c;
  const { headers } = incoming;
  const body = decodeBody(c.bodyKind, headers['content-type'], rawBody);
  const query = new URLSearchParams(incoming.rawQuery);
  validateQuery(c.validators.query, query, c.validators.integerParams);
  validateBody(c.validators.body, body);
  const request: HttpRequest = {
    method: incoming.method,
    path: incoming.path,
    params: decodeParams(c.paramNames, incoming.rawParams),
    query,
    headers,
    body,
    rawBody,
    requestId: incoming.requestId,
    principal,
    clientAddress,
  };
  const reply = route.authorize === undefined ? route.handler(request, deps, NOTHING_FOUND) : authorizeThenHandle(route, request, deps, hooks);
  return route.sse === true && principal !== undefined && 'orgId' in principal ? countedForOrg(reply, principal.orgId) : reply;
}

/** An event stream takes a place of its caller's org (TROUPE_STREAMS_PER_ORG), checked where it opens (event-streams.ts). */
function countedForOrg(reply: Reply | Promise<Reply>, orgId: string): Reply | Promise<Reply> {
  const mark = (r: Reply): Reply => (r.kind === 'sse' ? { kind: 'sse', open: r.open.bind(r), orgId } : r);
  return isPending(reply) ? reply.then(mark) : mark(reply);
}

async function authorizeThenHandle<D>(route: Route<D>, request: HttpRequest, deps: D, hooks: EdgeHooks): Promise<Reply> {
  const authorization = route.authorize!;
  // Tenancy before Cedar: what is absent or another org's is 404 from `find`, and only then may Cedar say 403.
  const p = orgPrincipal(request);
  const found = authorization.find === undefined ? undefined : await authorization.find(request, deps, p);
  const action = typeof authorization.action === 'function' ? authorization.action(request, p) : authorization.action;
  try {
    await hooks.authorize!(p, action, authorization.resource(request, p, found));
    return await route.handler(request, deps, { found });
  } catch (err) {
    await authorization.release?.(found, err, deps).catch(() => undefined);
    throw err;
  }
}

/** A handler's or the pipeline's outcome is a promise only when something had to wait. */
export function isPending<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** A reply other than a stream, as it goes on the wire. */
export interface SettledReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** undefined for 204 and 304, which carry no body or content type. */
  readonly contentType: string | undefined;
  readonly body: string | Buffer | undefined;
}

export const JSON_TYPE = 'application/json; charset=utf-8';

/** The status, headers and bytes of a handler's JSON or text reply; throws (a 500) when the handler got them wrong. */
export function settle(route: Route<any>, reply: Exclude<Reply, { kind: 'sse' } | { kind: 'chunks' }>): SettledReply {
  const status = reply.status ?? route.successStatus ?? 200;
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
  if (status === 204 || status === 304) return { status, headers, contentType: undefined, body: undefined };
  if (reply.kind === 'text') {
    // JSON a handler serialised once for every reply (the quiet heartbeat's) carries the edge's own type.
    if (reply.contentType !== JSON_TYPE) assertSafeHeaders({ 'content-type': reply.contentType });
    return { status, headers, contentType: reply.contentType, body: reply.body };
  }
  return { status, headers, contentType: JSON_TYPE, body: JSON.stringify(reply.body) ?? 'null' };
}

/** An error answer: its status, `{error, code}` body, extra headers, and whether the connection must close. */
export interface ErrorAnswer {
  readonly status: number;
  readonly body: ErrorBody;
  readonly headers: Readonly<Record<string, string>>;
  readonly close: boolean;
}

/** Maps what the pipeline threw to the answer; unexpected errors are logged with `context` and answered 500. */
export function refusal(route: Route<any> | undefined, err: unknown, log: Logger, context: Record<string, unknown>, extraHeaders: Record<string, string> = {}): ErrorAnswer {
  const tooLarge = err instanceof TroupeError && err.code === 'HTTP_BODY_TOO_LARGE';
  // A refusal before the body was read to its end (413) must close the connection: the rest of it is unread.
  const close = tooLarge || (err instanceof TroupeError && err.code === 'RATE_LIMITED' && route?.limitsSource === true);
  const answered = tooLarge && route?.bodyTooLarge !== undefined ? new TroupeError(route.bodyTooLarge, err.message) : err;
  const { status, body } = toErrorReply(answered, log, context);
  // A refusal the caller can retry says when: the rate limiter's wait, or a second for a dependency that is down.
  const retryAfter = status === 429 ? body.details?.retryAfterSeconds : status === 503 ? (body.details?.retryAfterSeconds ?? 1) : undefined;
  const headers = typeof retryAfter === 'number' ? { ...extraHeaders, 'retry-after': String(retryAfter) } : extraHeaders;
  return { status, body, headers, close };
}

/** uWS hands parameters over still percent-encoded; a malformed escape is the client's error, not ours. */
export function decodeParams(names: readonly string[], raw: readonly string[]): Record<string, string> {
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
