import { TroupeError } from '../ops/kernel/errors.js';
import { decodeUtf8 } from '../ops/kernel/utf8.js';
import { parseJsonBody } from '../ops/kernel/json-text.js';
import type { BodyKind } from './types.js';

/** Default cap per route (CONTRACT: "413 body over the route's cap (1 MiB default)"). */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export const EMPTY_BODY: Buffer = Buffer.alloc(0);

/** The client went away before its request was complete; there is nobody left to answer. */
export class ClientAborted extends Error {
  constructor() {
    super('client closed the connection before the request was complete');
    this.name = 'ClientAborted';
  }
}

/** The streaming half of a uWS response, narrowed so the reader can be driven without a socket in tests. */
export interface BodySource {
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): unknown;
}

export interface CollectOptions {
  /** Bytes; one byte more is 413. */
  readonly limit: number;
  /** The Content-Length header as sent, if any. */
  readonly declaredLength: string | undefined;
  /** Registers a callback for the client going away, so a half-read body never leaves its promise pending. */
  readonly onAbort: (fn: () => void) => void;
}

/**
 * Collects a request body while it streams, counting bytes as they arrive: the moment the count passes the cap the
 * outcome is HTTP_BODY_TOO_LARGE and everything buffered so far is dropped, so a hostile client can make us hold at
 * most `limit` bytes however much it sends. A Content-Length above the cap is refused before any byte is read.
 * `done` is called once, with the body or the error (ClientAborted when the client goes away first), possibly
 * before this returns. Must be called synchronously inside the uWS handler (uWS drops data that arrives with no
 * handler attached).
 */
export function readBody(source: BodySource, options: CollectOptions, done: (outcome: Buffer | Error) => void): void {
  const { limit, declaredLength, onAbort } = options;
  if (declaredLength !== undefined && declaredLength !== '') {
    if (!/^\d{1,16}$/.test(declaredLength)) return done(new TroupeError('VALIDATION_FAILED', 'content-length header is not a number'));
    if (Number(declaredLength) > limit) return done(tooLarge(limit));
  }
  let chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  onAbort(() => {
    if (settled) return;
    settled = true;
    chunks = [];
    done(new ClientAborted());
  });
  source.onData((chunk, isLast) => {
    if (settled) return;
    received += chunk.byteLength;
    if (received > limit) {
      settled = true;
      chunks = [];
      done(tooLarge(limit));
      return;
    }
    // uWS neuters the ArrayBuffer when this callback returns, so every chunk is copied out: into Node's pooled
    // allocation for small bodies, where a fresh ArrayBuffer per chunk (`chunk.slice`) cost GC time per heartbeat.
    if (chunk.byteLength > 0) {
      const copy = Buffer.allocUnsafe(chunk.byteLength);
      copy.set(new Uint8Array(chunk));
      chunks.push(copy);
    }
    if (isLast) {
      settled = true;
      done(chunks.length === 1 ? chunks[0]! : chunks.length === 0 ? EMPTY_BODY : Buffer.concat(chunks, received));
    }
  });
}

/** `readBody` as a promise, for a reader that awaits the body anyway (a write waiting for admission, `inject`). */
export function collectBody(source: BodySource, options: CollectOptions): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    readBody(source, options, (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)));
  });
}

function tooLarge(limit: number): TroupeError {
  return new TroupeError('HTTP_BODY_TOO_LARGE', `request body is larger than ${limit} bytes`, { limitBytes: limit });
}

interface ContentType { readonly mediaType: string; readonly params: Readonly<Record<string, string>> }

/**
 * Parsed Content-Type headers by their exact text: a fleet sends the same one or two values on every request.
 * Bounded (a hostile client can send endless variants); emptied when full.
 */
const parsedContentTypes = new Map<string, ContentType>();
const MAX_PARSED_CONTENT_TYPES = 256;

/** `type/subtype` lower-cased and its parameters, from a Content-Type header. */
export function parseContentType(header: string | undefined): ContentType {
  const key = header ?? '';
  const known = parsedContentTypes.get(key);
  if (known !== undefined) return known;
  const [type = '', ...rest] = key.split(';');
  const params: Record<string, string> = {};
  for (const part of rest) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    params[part.slice(0, eq).trim().toLowerCase()] = part.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  const parsed: ContentType = Object.freeze({ mediaType: type.trim().toLowerCase(), params: Object.freeze(params) });
  if (parsedContentTypes.size >= MAX_PARSED_CONTENT_TYPES) parsedContentTypes.clear();
  parsedContentTypes.set(key, parsed);
  return parsed;
}

function acceptsCharset(params: Readonly<Record<string, string>>): boolean {
  return params.charset === undefined || params.charset === 'utf-8' || params.charset === 'utf8';
}

function unsupported(expected: string, got: string | undefined): TroupeError {
  return new TroupeError('HTTP_UNSUPPORTED_MEDIA_TYPE', `expected content-type ${expected}`, { contentType: got ?? null });
}

const parseJson = parseJsonBody;

/**
 * Turns the raw bytes into what the handler sees as `body`, by the route's body kind:
 * - 'json': `application/json` (charset utf-8 or none) → parsed value; an empty body is `{}` whatever its
 *   content type, so a POST with nothing to say needs no header and the route's schema still decides.
 * - 'form': `application/x-www-form-urlencoded` → an object of strings (first value wins); `application/json`
 *   is accepted too, because OAuth clients send either (CONTRACT, machine token).
 * - 'raw': the bytes themselves, untouched, for signature checks.
 * - 'none': undefined; any body sent is ignored.
 * Order of refusals: wrong content type (415) before invalid UTF-8 (400) before malformed JSON (400).
 */
export function decodeBody(kind: BodyKind, contentType: string | undefined, raw: Buffer): unknown {
  switch (kind) {
    case 'none':
      return undefined;
    case 'raw':
      return raw;
    case 'json': {
      if (raw.length === 0) return {};
      const { mediaType, params } = parseContentType(contentType);
      if (mediaType !== 'application/json' || !acceptsCharset(params)) throw unsupported('application/json', contentType);
      return parseJson(raw);
    }
    case 'form': {
      if (raw.length === 0) return {};
      const { mediaType, params } = parseContentType(contentType);
      if (!acceptsCharset(params)) throw unsupported('application/x-www-form-urlencoded', contentType);
      if (mediaType === 'application/json') return parseJson(raw);
      if (mediaType !== 'application/x-www-form-urlencoded') throw unsupported('application/x-www-form-urlencoded', contentType);
      const fields: Record<string, string> = Object.create(null) as Record<string, string>;
      for (const [key, value] of new URLSearchParams(decodeUtf8(raw))) {
        if (!(key in fields)) fields[key] = value;
      }
      return fields;
    }
  }
}
