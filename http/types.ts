import type { OrgPrincipal, Principal } from '../actors/services/identity/principal.js';
import type { ResourceRef } from '../actors/services/identity/ports.js';
import type { Action } from '../actors/services/identity/authorizer.js';
import type { ErrorCode } from '../ops/kernel/errors.js';

/**
 * A request as handlers see it: copied out of uWebSockets.js before the first await (uWS request objects are
 * stack-allocated), body already read under the route's cap, decoded as strict UTF-8, parsed and validated.
 * Handlers are plain async functions of this object, so tests call them without a socket.
 */
export interface HttpRequest<Body = unknown> {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** Lower-cased header names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Body;
  /** The exact bytes received; signature checks use these, never a re-serialisation. */
  readonly rawBody: Buffer;
  readonly requestId: string;
  /** Set by the auth step for every route whose `auth` is not 'none'. */
  readonly principal: Principal | undefined;
  /** The client's address (see http/client-address.ts); read when a limit keyed by source needs it. */
  clientAddress(): string;
}

export interface JsonReply {
  readonly kind?: 'json';
  readonly status?: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface TextReply {
  readonly kind: 'text';
  readonly status?: number;
  /** Bytes are sent as they are (a precompressed asset, with its content-encoding among `headers`). */
  readonly body: string | Buffer;
  readonly contentType: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** An SSE stream: the server writes the preamble, then hands the open stream to `open`. */
export interface SseReply {
  readonly kind: 'sse';
  open(stream: SseStream): void | Promise<void>;
  /** The org whose share of streams it takes (TROUPE_STREAMS_PER_ORG); set by the pipeline from the caller. */
  readonly orgId?: string;
}

/**
 * A body produced a chunk at a time, for a download too large to hold (a session's whole transcript as NDJSON): the
 * edge writes each chunk as the client takes it (http/chunked-reply.ts). An error after the first chunk cuts the
 * connection; check what can be refused before returning the reply.
 */
export interface ChunkedReply {
  readonly kind: 'chunks';
  readonly status?: number;
  readonly contentType: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly chunks: AsyncIterable<string>;
}

export type Reply = JsonReply | TextReply | SseReply | ChunkedReply;

export interface SseStream {
  /** Writes one event; false when the client is gone or was cut off for being too slow. */
  send(event: { id?: string; event?: string; data: unknown }): boolean;
  /** The Last-Event-ID the client resumed from, if any. */
  readonly lastEventId: string | undefined;
  /** Registers cleanup to run once when the stream ends for any reason. */
  onClose(fn: () => void): void;
  /**
   * Bytes written and not yet taken by the client, where the stream knows: a producer catching a client up on a long
   * backlog waits while it is high rather than being cut off for it.
   */
  readonly unsentBytes?: number;
  close(): void;
  readonly closed: boolean;
}

/**
 * How a route authenticates:
 * - 'none': no credential (health, registration by body token, signed webhooks).
 * - 'admin': only the platform admin token.
 * - 'org': any org credential (user token, session cookie, API key, machine token).
 * - 'human': a user token or session cookie; other org credentials authenticate but get 403.
 * - 'runtime': a worker runtime JWT.
 * - 'any': any org credential including a runtime JWT.
 */
export type AuthMode = 'none' | 'admin' | 'org' | 'human' | 'runtime' | 'any';

export type BodyKind = 'json' | 'form' | 'raw' | 'none';

/**
 * 'workerOutput': a worker's bytes of agent output, counted before the body is decoded (decision 0066).
 * 'workerHeartbeat', 'workerPoll': a worker's heartbeats and polls, each against its own per-node limit (decision 0082).
 */
export type RateLimitKind = 'write' | 'dispatch' | 'workerOutput' | 'workerHeartbeat' | 'workerPoll';

export interface RouteContext<Deps> {
  readonly deps: Deps;
}

/**
 * The Cedar check a route makes before its handler runs, declared rather than called: the edge evaluates it once
 * per request, after the body is validated (http/pipeline.ts).
 */
export interface RouteAuthorization<Deps = unknown, Body = any, Found = any> {
  /**
   * The tenancy step, run first: looks up what the request names in the caller's org and throws NOT_FOUND when it is
   * absent or another org's (CONTRACT: another org's resource is 404, never 403), or any refusal that must come
   * before Cedar's. What it returns is the handler's `found`.
   */
  readonly find?: (req: HttpRequest<Body>, deps: Deps, principal: OrgPrincipal) => Promise<Found>;
  readonly action: Action | ((req: HttpRequest<Body>, principal: OrgPrincipal) => Action);
  /** The Cedar resource, from the request, the caller and what `find` found. */
  readonly resource: (req: HttpRequest<Body>, principal: OrgPrincipal, found: Found) => ResourceRef;
  /**
   * Gives back what `find` took when the request fails after it, in Cedar or in the handler (a signed dispatch's
   * nonce, so the client's retry of a request refused for an outage is not taken for a replay). Its own failure is
   * ignored: the request's error is what the client is answered.
   */
  readonly release?: (found: Found, err: unknown, deps: Deps) => Promise<void>;
}

/** What the edge hands a handler beside the request: what the route's `authorize.find` found (undefined without one). */
export interface RouteCall<Found = unknown> {
  readonly found: Found;
}

export interface Route<Deps = unknown> {
  readonly method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** uWS pattern syntax: `/api/org/teams/:id/members`. */
  readonly path: string;
  readonly auth: AuthMode;
  readonly summary: string;
  /** Longer prose for the OpenAPI document: an event stream's events, a protocol's rules. */
  readonly description?: string;
  readonly tags?: readonly string[];
  /** Default 'json' for post/put/patch, 'none' otherwise. */
  readonly bodyKind?: BodyKind;
  /** Bytes; default 1 MiB. */
  readonly bodyLimit?: number;
  /**
   * The error a body over `bodyLimit` answers with, where a spec fixes one other than 413 (the incident webhook:
   * 401). The body is still cut off while streaming and the connection closed. @default 'HTTP_BODY_TOO_LARGE'
   */
  readonly bodyTooLarge?: ErrorCode;
  /** JSON Schema the parsed body must satisfy (ajv, from schemas/). */
  readonly bodySchema?: Record<string, unknown>;
  /** JSON Schema for the query parameters, as an object of strings. */
  readonly querySchema?: Record<string, unknown>;
  /** JSON Schema of the success reply, for the OpenAPI document. */
  readonly responseSchema?: Record<string, unknown>;
  /** Media type of a success reply that is not JSON (a text reply), for the OpenAPI document. @default 'application/json' */
  readonly responseContentType?: string;
  /** Status of a success reply, for the OpenAPI document; default 200. */
  readonly successStatus?: number;
  /**
   * Which per-credential rate limit a request with an org user, API key or machine token counts against
   * (decision 0026): 'dispatch' counts against both the dispatch and the write limit. @default 'write' for post,
   * put, patch and delete; none for get. Runtime tokens (workers) count per worker on this node (decision 0082):
   * 'workerOutput' by the bytes they carry, 'workerHeartbeat' and 'workerPoll' against the heartbeat limit, each on
   * its own, and 'write' or 'dispatch' against the worker's limit of reports.
   */
  readonly rateLimit?: RateLimitKind | 'none';
  /**
   * Unauthenticated routes whose refusals are counted per source (the webhook ingests, decision 0025): a source over
   * its limit is answered 429 before its body is read, and the connection closed, so it costs the node nothing.
   */
  readonly limitsSource?: true;
  /**
   * Whether the node's admission budget for writes (http/admission.ts) applies. @default true for post, put, patch
   * and delete. 'exempt' for a write that must not be shed with the rest: the daemon heartbeat, which touches no
   * database on its path and whose refusal would make a live worker look dead.
   */
  readonly admission?: 'exempt';
  /**
   * The request headers the handler reads beyond the edge's own (`EDGE_HEADERS`, http/exchange.ts). Given, the edge
   * copies only those out of uWS, each by name, instead of visiting every header: for the daemon heartbeat the copy
   * of all of them was ~9 % of the node's CPU. A header not listed reads as absent, and a repeated one as its first
   * value (as Node's own server reads Authorization). @default every header, repeats joined
   */
  readonly readsHeaders?: readonly string[];
  /** Marks a route deprecated in OpenAPI. */
  readonly deprecated?: boolean;
  /** Response is an event stream. */
  readonly sse?: boolean;
  /**
   * The events an event stream sends, by event name: the schema of each event's `data` and the name it has among the
   * document's components (so the generated client exports its type, e.g. `components['schemas']['SessionStatusEvent']`).
   */
  readonly sseEvents?: Readonly<Record<string, { readonly schemaName: string; readonly schema: Record<string, unknown> }>>;
  /** Replies that do not use the `{error, code}` shape, by status, for the OpenAPI document. */
  readonly errorResponses?: Readonly<Record<string, { readonly description: string; readonly schema: Record<string, unknown> }>>;
  /**
   * Cedar, evaluated by the edge before the handler; absent where a route decides per item (a list filtered with
   * `authz.check`) or needs no org decision (admin, public and signed routes). Only for org credentials.
   */
  readonly authorize?: RouteAuthorization<Deps>;
  /** May return the reply itself when it needs no wait: the edge then answers without making a promise (http/pipeline.ts). */
  handler(req: HttpRequest<any>, deps: Deps, call: RouteCall<any>): Reply | Promise<Reply>;
}
