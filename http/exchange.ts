import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { InFlightLink } from './in-flight.js';
import type { UwsRequest, UwsResponse } from './uws.js';

/**
 * The request as copied out of uWS. uWS request objects are stack-allocated and die at the first await, so every
 * field a later step needs is read here, synchronously, in the route callback.
 */
export interface CopiedRequest {
  readonly method: string;
  readonly path: string;
  readonly rawQuery: string;
  readonly rawParams: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  readonly requestId: string;
}

// Generous enough for UUIDs, ULIDs and trace ids; anything else is replaced rather than echoed into our logs.
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Request ids we generate: UUID-shaped (8-4-4-4-12 hex, what log tooling and the tests expect), 92 random bits
 * drawn once per process followed by a 48-bit counter. Unique within the process by construction and across
 * processes by the random part; an id is a correlation handle, never a secret (a client may choose its own), so
 * it need not be unpredictable, and a counter costs nothing where randomUUID per request showed in the profile.
 */
const idPrefix = ((): string => {
  const hex = randomBytes(12).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}`;
})();
let idCounter = 0;
export function nextRequestId(): string {
  idCounter = (idCounter + 1) % 0x1000000000000;
  return `${idPrefix}-${idCounter.toString(16).padStart(12, '0')}`;
}

/** The request's id: the one the client presented when it is sane, otherwise one of ours. */
export function requestIdFor(presented: string | undefined): string {
  return presented !== undefined && SANE_REQUEST_ID.test(presented) ? presented : nextRequestId();
}

/**
 * A record with no inherited properties, like `Object.create(null)`, but in V8's fast (shaped) object mode:
 * `Object.create(null)` objects start as hash dictionaries, which showed in the heartbeat profile. Its prototype
 * is itself prototype-less and empty, so no header name (`__proto__`, `constructor`, `toString`) can collide with
 * an inherited property or a setter.
 */
// TypeScript types no function expression as a constructor, and a class's prototype cannot be replaced.
export const HeaderBag = function HeaderBag(this: object) {} as unknown as new () => object;
HeaderBag.prototype = Object.create(null) as object;

/**
 * The header object `copyRequest` is filling. uWS calls the visitor synchronously, so one module-level visitor
 * serves every request instead of a closure allocated (and, under tsx, named) per request.
 */
let collecting: Record<string, string> | undefined;
function collectHeader(key: string, value: string): void {
  const headers = collecting!;
  const prior = headers[key];
  headers[key] = prior === undefined ? value : `${prior}${key === 'cookie' ? '; ' : ', '}${value}`;
}

/**
 * Every request header the edge itself reads (authentication, body reader, trace, request id, client address, the
 * same-origin check), whatever the route: what a route that names its headers (`Route.readsHeaders`) still gets.
 */
export const EDGE_HEADERS: readonly string[] = Object.freeze([
  'authorization', 'cookie', 'content-type', 'content-length', 'traceparent', 'x-request-id', 'x-forwarded-for',
  'sec-fetch-site', 'origin', 'host',
]);

/** The headers a route gets: the edge's and its own (`readsHeaders`), or undefined for every header. */
export function headersToCopy(readsHeaders: readonly string[] | undefined, sse: boolean): readonly string[] | undefined {
  if (readsHeaders === undefined) return undefined;
  return Object.freeze([...new Set([...EDGE_HEADERS, ...(sse ? ['last-event-id'] : []), ...readsHeaders.map((h) => h.toLowerCase())])]);
}

/**
 * `method` is the route's own (upper case) when it matched one method; otherwise it is read from the request.
 * `headerNames` (see `headersToCopy`) copies only those headers, each by name; without it, every header.
 */
export function copyRequest(req: UwsRequest, paramCount: number, method?: string, headerNames?: readonly string[]): CopiedRequest {
  const headers = new HeaderBag() as Record<string, string>;
  if (headerNames === undefined) {
    collecting = headers;
    req.forEach(collectHeader);
    collecting = undefined;
  } else {
    for (let i = 0; i < headerNames.length; i++) {
      const name = headerNames[i]!;
      // uWS answers '' for a header that is absent: an empty header reads as absent too.
      const value = req.getHeader(name);
      if (value !== '') headers[name] = value;
    }
  }
  const rawParams: string[] = [];
  for (let i = 0; i < paramCount; i++) rawParams.push(req.getParameter(i));
  return {
    method: method ?? req.getMethod().toUpperCase(),
    path: req.getUrl(),
    rawQuery: req.getQuery() ?? '',
    rawParams,
    headers,
    requestId: requestIdFor(headers['x-request-id']),
  };
}

// A header value with CR or LF would let whoever chose it write their own headers or body.
const SAFE_HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const SAFE_HEADER_VALUE = /^[^\r\n\0]*$/;

export function assertSafeHeaders(headers: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (!SAFE_HEADER_NAME.test(name) || !SAFE_HEADER_VALUE.test(value)) {
      throw new Error(`reply header ${JSON.stringify(name)} has an invalid name or value`);
    }
  }
}

const statusLines = new Map<number, string>();
function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) statusLines.set(status, (line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`));
  return line;
}

/**
 * One request/response pair on a uWS socket. It holds the uWS rules in one place: `onAborted` is attached at
 * construction (inside the route callback, before any await), nothing is written once the client is gone or the
 * reply is sent, and every write is corked because most happen after an await, outside uWS's own callback.
 */
export class Exchange implements InFlightLink {
  inFlightPrev: InFlightLink | undefined = undefined;
  inFlightNext: InFlightLink | undefined = undefined;
  inFlightListed = false;
  private aborted = false;
  private responded = false;
  /** Usually one listener (the body reader), so no array until a second one comes. */
  private abortListener: (() => void) | undefined;
  private moreAbortListeners: Array<() => void> | undefined;

  /**
   * Runs `fn` when the client goes away (at once if it already has). Bound here rather than declared as an arrow
   * field: under tsx an arrow field is also renamed per instance, which showed in the heartbeat profile.
   */
  readonly onAbort: (fn: () => void) => void;

  constructor(readonly res: UwsResponse) {
    this.onAbort = this.addAbortListener.bind(this);
    res.onAborted(() => {
      this.aborted = true;
      const first = this.abortListener;
      const more = this.moreAbortListeners;
      this.abortListener = undefined;
      this.moreAbortListeners = undefined;
      first?.();
      if (more !== undefined) for (const fn of more) fn();
    });
  }

  /** True while a reply may still be written. */
  get open(): boolean {
    return !this.aborted && !this.responded;
  }

  get clientGone(): boolean {
    return this.aborted;
  }

  private addAbortListener(fn: () => void): void {
    if (this.aborted) fn();
    else if (this.abortListener === undefined) this.abortListener = fn;
    else (this.moreAbortListeners ??= []).push(fn);
  }

  /**
   * Sends a complete reply: `headers` (already checked), then `content-type` (unless undefined) and `x-request-id`,
   * written straight to the socket rather than merged into a fresh header object per reply. `closeConnection` is
   * for refusals sent before the body was read to its end.
   */
  respond(
    status: number,
    headers: Readonly<Record<string, string>>,
    contentType: string | undefined,
    requestId: string,
    body: string | Buffer | undefined,
    closeConnection = false,
  ): boolean {
    if (!this.open) return false;
    this.responded = true;
    const res = this.res;
    res.cork(() => {
      // uWS writes `200 OK` itself when no status was written: one call across to it fewer on most replies.
      if (status !== 200) res.writeStatus(statusLine(status));
      for (const name in headers) res.writeHeader(name, headers[name]!);
      if (contentType !== undefined) res.writeHeader('content-type', contentType);
      res.writeHeader('x-request-id', requestId);
      // No arguments unless the connection closes: uWS reads an `undefined` length as NaN and announces a huge
      // Content-Length for a reply that has no body. Closing, it writes `Content-Length: 0`, which is true here.
      if (body === undefined) closeConnection ? res.endWithoutBody(0, true) : res.endWithoutBody();
      else res.end(body, closeConnection);
    });
    return true;
  }

  /** Drops the connection of a request that was never answered (shutdown grace ran out). */
  abandon(): void {
    if (this.open) this.res.close();
  }

  /** Writes the status line and headers of a streamed reply and flushes them with `preamble`. */
  startStream(status: number, headers: Readonly<Record<string, string>>, preamble: string): boolean {
    if (!this.open) return false;
    this.responded = true;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      for (const [name, value] of Object.entries(headers)) this.res.writeHeader(name, value);
      this.res.write(preamble);
    });
    return true;
  }
}
