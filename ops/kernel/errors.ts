/**
 * The one registry of error codes. Every error that reaches a client, or crosses the broker between nodes,
 * carries one of these codes; the HTTP status and whether a retry can help come from here and nowhere else.
 * `test/unit/kernel/errors.test.ts` keeps this table, the OpenAPI error schema and the HTTP mapping in step.
 */
export const errorRegistry = {
  // 400: the client's request is malformed; retrying the same request cannot help.
  HTTP_BAD_JSON: { status: 400, retryable: false, message: 'request body is not valid JSON' },
  HTTP_BAD_UTF8: { status: 400, retryable: false, message: 'request body is not valid UTF-8' },
  HTTP_BAD_QUERY: { status: 400, retryable: false, message: 'query parameter is invalid' },
  VALIDATION_FAILED: { status: 400, retryable: false, message: 'request does not match its schema' },
  // 401 / 403: who the caller is, and what it may do.
  AUTH_MISSING: { status: 401, retryable: false, message: 'credentials are missing' },
  AUTH_INVALID: { status: 401, retryable: false, message: 'credentials are invalid or expired' },
  AUTH_FORBIDDEN: { status: 403, retryable: false, message: 'not allowed' },
  AUTH_HUMAN_ONLY: { status: 403, retryable: false, message: 'this operation takes a user token or session' },
  AUTH_ADMIN_ONLY: { status: 403, retryable: false, message: 'this operation takes the platform admin token' },
  AUTHZ_DENIED: { status: 403, retryable: false, message: 'denied by policy' },
  TENANT_MISMATCH: { status: 403, retryable: false, message: 'orgId does not match the authenticated org' },
  SSO_REQUIRED: { status: 403, retryable: false, message: "this email's org signs in with single sign-on only" },
  // 404 / 405 / 409 / 413 / 415 / 429
  NOT_FOUND: { status: 404, retryable: false, message: 'not found' },
  ROUTE_NOT_FOUND: { status: 404, retryable: false, message: 'no such route' },
  METHOD_NOT_ALLOWED: { status: 405, retryable: false, message: 'method not allowed on this route' },
  CONFLICT: { status: 409, retryable: false, message: 'conflicts with the current state' },
  ILLEGAL_TRANSITION: { status: 409, retryable: false, message: 'illegal status transition' },
  ALREADY_EXISTS: { status: 409, retryable: false, message: 'already exists' },
  CONCURRENCY_LIMIT: { status: 409, retryable: false, message: "the concurrency key is at its project's limit" },
  // Details carry `spentUsd` and `limitUsd` (decision 0080); a retry helps only once the budget is raised or a month begins.
  BUDGET_EXCEEDED: { status: 409, retryable: false, message: "the project's monthly budget is spent" },
  HTTP_BODY_TOO_LARGE: { status: 413, retryable: false, message: 'request body is too large' },
  HTTP_UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, message: 'unsupported content type' },
  RATE_LIMITED: { status: 429, retryable: true, message: 'rate limited' },
  TOO_MANY_STREAMS: { status: 429, retryable: true, message: 'this org has as many event streams open on this node as it may (TROUPE_STREAMS_PER_ORG)' },
  // 502: a provider we called on the caller's behalf failed (unreachable, 5xx, an answer that is not OAuth).
  UPSTREAM_FAILED: { status: 502, retryable: true, message: 'an upstream provider failed' },
  // 503: a dependency is down or an actor did not answer in time; the same request may succeed later.
  STORAGE_UNAVAILABLE: { status: 503, retryable: true, message: 'storage is unavailable' },
  STORAGE_STALE_VERSION: { status: 503, retryable: true, message: 'state was written by another owner' },
  CACHE_UNAVAILABLE: { status: 503, retryable: true, message: 'cache is unavailable' },
  TRANSPORT_UNAVAILABLE: { status: 503, retryable: true, message: 'message transport is unavailable' },
  TRANSPORT_TIMEOUT: { status: 503, retryable: true, message: 'no answer before the deadline' },
  ACTOR_STOPPED: { status: 503, retryable: true, message: 'the actor stopped before answering' },
  SHUTTING_DOWN: { status: 503, retryable: true, message: 'this node is shutting down' },
  OVERLOADED: { status: 503, retryable: true, message: 'this node has more writes than it can serve in time; retry shortly' },
  DNS_LOOKUP_FAILED: { status: 503, retryable: true, message: 'the DNS lookup failed; retry shortly' },
  // 500: our own bug. Never used for anything a client sent.
  INTERNAL: { status: 500, retryable: false, message: 'internal error' },
} as const satisfies Record<string, { status: number; retryable: boolean; message: string }>;

export type ErrorCode = keyof typeof errorRegistry;

export class TroupeError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, details?: Record<string, unknown>) {
    const entry = errorRegistry[code];
    super(message ?? entry.message);
    this.name = 'TroupeError';
    this.code = code;
    this.status = entry.status;
    this.retryable = entry.retryable;
    this.details = details;
  }

  /** The form an error takes on the wire, over HTTP and between nodes. */
  toWire(): WireError {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export interface WireError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(errorRegistry, code);
}

/** Rebuilds an error that crossed the broker; an unknown code becomes INTERNAL rather than trusting the sender. */
export function fromWire(wire: WireError): TroupeError {
  return isErrorCode(wire.code)
    ? new TroupeError(wire.code, wire.message, wire.details)
    : new TroupeError('INTERNAL', wire.message);
}

export function fail(code: ErrorCode, message?: string, details?: Record<string, unknown>): never {
  throw new TroupeError(code, message, details);
}

/** Anything thrown that is not ours is a bug; it is logged in full and answered as INTERNAL without detail. */
export function asTroupeError(err: unknown): TroupeError {
  return err instanceof TroupeError ? err : new TroupeError('INTERNAL');
}
