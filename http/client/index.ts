import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, operations, paths } from './api-types.generated.js';

/**
 * The typed client of the Troupe API: `openapi-fetch` over the types `openapi-typescript` generates from
 * `GET /api/openapi.json` (decision 0039). Every path, parameter, body and reply is checked by the compiler against
 * the document; this file only adds what the document cannot say: where the node is, which credential to send, and
 * how a refusal becomes an error a caller can branch on.
 *
 *   const api = createTroupeClient({ baseUrl: 'http://127.0.0.1:8080', token: apiKey });
 *   const { sessions } = await unwrap(api.GET('/api/fleet/sessions', { params: { query: { status: 'running' } } }));
 */
export type { components, operations, paths };
export type TroupeApi = Client<paths>;
export type ApiErrorBody = components['schemas']['Error'];
/** The codes `{error, code}` replies carry (ops/kernel/errors.ts), as the document enumerates them. */
export type ApiErrorCode = ApiErrorBody['code'];

export interface TroupeClientOptions {
  /** The node's URL, e.g. `http://127.0.0.1:8080` (no path: the document's paths start with /api or /v1). */
  readonly baseUrl: string;
  /**
   * The bearer credential: an API key, user token, admin token or runtime JWT. A function is asked before each
   * request, so a worker can swap in a refreshed runtime JWT without a new client.
   */
  readonly token?: string | (() => string | undefined);
  /** Abandon a request that has no answer after this long; event streams are exempt. Default 30 s. */
  readonly timeoutMs?: number;
  readonly fetch?: typeof globalThis.fetch;
}

/** The node answered with an error status; `code` is its machine-readable reason when the body was `{error, code}`. */
export class TroupeApiError extends Error {
  override readonly name = 'TroupeApiError';
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode | undefined,
    readonly reason: string,
    readonly method: string,
    readonly path: string,
    readonly body: unknown,
  ) {
    super(`${method} ${path} failed: ${status}${code ? ` ${code}` : ''}: ${reason}`);
  }

  /** `details` of the error body (e.g. `{field}` of a validation failure), when it has one. */
  get details(): Record<string, unknown> | undefined {
    return isErrorBody(this.body) ? (this.body.details as Record<string, unknown> | undefined) : undefined;
  }
}

/** No answer: the node is down, unreachable, or slower than the timeout. Worth retrying, unlike most API errors. */
export class TroupeUnreachableError extends Error {
  override readonly name = 'TroupeUnreachableError';
  constructor(readonly baseUrl: string, cause: unknown) {
    super(`cannot reach Troupe at ${baseUrl}: ${describeCause(cause)}`, { cause });
  }
}

export function createTroupeClient(options: TroupeClientOptions): TroupeApi {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const send = options.fetch ?? globalThis.fetch;
  // The request's signal goes to fetch itself: Node's fetch follows the signal of a `Request` object only weakly, and
  // once that object was collected neither the deadline nor the caller's abort would reach the request.
  const api = createClient<paths>({ baseUrl, fetch: (request: Request) => send(request, signals.has(request) ? { signal: signals.get(request)! } : undefined) });
  api.use(credentialAndTimeout(options.token, options.timeoutMs ?? 30_000), unreachable(baseUrl));
  return api;
}

/** The signal (the caller's abort or the deadline) of each request the client built, for `fetch`. */
const signals = new WeakMap<Request, AbortSignal>();

/**
 * A signal that aborts with the caller's signal or after `timeoutMs`. An AbortController, not `AbortSignal.any`:
 * Node may collect an `any` signal that only fetch refers to, and the request would then wait for ever. The caller's
 * abort reaches `request.signal` through the request object itself, which Node also follows only weakly, so the
 * timer holds the request (and the controller) until it fires: both reach the request for as long as it may last.
 */
function deadlineSignal(request: Request, timeoutMs: number): AbortSignal {
  const controller = new AbortController();
  const onAbort = () => controller.abort(request.signal.reason);
  if (request.signal.aborted) onAbort(); else request.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    request.signal.removeEventListener('abort', onAbort);
    controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError'));
  }, timeoutMs);
  unrefTimer(timer);
  return controller.signal;
}

/** In Node a timer must not keep a finished CLI alive; in a browser it is a number (the client compiles for both). */
function unrefTimer(timer: unknown): void {
  if (typeof timer === 'object' && timer !== null && 'unref' in timer && typeof timer.unref === 'function') timer.unref();
}

function credentialAndTimeout(token: TroupeClientOptions['token'], timeoutMs: number): Middleware {
  return {
    onRequest({ request }) {
      const bearer = typeof token === 'function' ? token() : token;
      if (bearer !== undefined && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${bearer}`);
      // A stream is meant to stay open (its reader cancels it: `streamEvents`); everything else gets a deadline.
      const signal = request.headers.get('accept')?.includes('text/event-stream') ? request.signal : deadlineSignal(request, timeoutMs);
      const next = new Request(request, { signal });
      signals.set(next, signal);
      return next;
    },
    onResponse({ request, response }) {
      methods.set(response, request.method);
    },
  };
}

function unreachable(baseUrl: string): Middleware {
  return {
    onError({ error }) {
      // The caller's own abort is not an outage: let it through as it is.
      if (error instanceof Error && error.name === 'AbortError') return error;
      return new TroupeUnreachableError(baseUrl, error);
    },
  };
}

/** What openapi-fetch resolves with: `data` on success, `error` (the parsed body) otherwise, and the response. */
type Outcome = { readonly data?: unknown; readonly error?: unknown; readonly response: Response };
/** The success member's data of an openapi-fetch outcome (its error member declares `data?: never`). */
type DataOf<R> = R extends { data: infer D; error?: never } ? D : never;

/**
 * The reply's data, or a `TroupeApiError` for an error status (network failures already arrive as
 * `TroupeUnreachableError`). Use it around any call of the client: `await unwrap(api.POST(...))`.
 */
export async function unwrap<R extends Outcome>(pending: Promise<R>): Promise<DataOf<R>> {
  const outcome = await pending;
  const { response } = outcome;
  if (response.ok) return outcome.data as DataOf<R>;
  const body = outcome.error;
  const path = new URL(response.url || 'http://unknown/').pathname;
  const method = methodOf(response);
  if (isErrorBody(body)) throw new TroupeApiError(response.status, body.code as ApiErrorCode, body.error, method, path, body);
  const reason = typeof body === 'string' && body !== '' ? body : response.statusText || 'no reason given';
  throw new TroupeApiError(response.status, undefined, reason, method, path, body);
}

function isErrorBody(body: unknown): body is { error: string; code: string; details?: unknown } {
  return typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string'
    && typeof (body as { code?: unknown }).code === 'string';
}

/** A Response does not carry its request's method; the client's middleware records it, for error messages. */
const methods = new WeakMap<Response, string>();
function methodOf(response: Response): string {
  return methods.get(response) ?? 'request';
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    if (cause.name === 'TimeoutError') return 'no answer in time';
    const inner = (cause as { cause?: unknown }).cause;
    return inner instanceof Error ? `${cause.message} (${inner.message})` : cause.message;
  }
  return String(cause);
}

export { eventStream, streamEvents, type StreamEvent } from './events.js';
