// `String.prototype.isWellFormed` is ES2024, past the ES2023 lib the project compiles with; every Node it runs on has it.
/// <reference lib="es2024.string" />
import { TroupeError } from './errors.js';
import { decodeUtf8 } from './utf8.js';

/** How deep a request's JSON may nest: more than any of our bodies needs, far less than what breaks a stack. */
export const MAX_JSON_DEPTH = 64;

/**
 * Parses a request body as JSON that can be stored and walked: strict UTF-8 (HTTP_BAD_UTF8), then JSON
 * (HTTP_BAD_JSON), then every string, keys included, well-formed UTF-16 and nesting at most MAX_JSON_DEPTH deep
 * (HTTP_BAD_JSON). A lone surrogate (`"\ud800"`) is valid JSON but not text: Postgres refuses it in jsonb and text,
 * which turned a client's mistake into a 500; a body nested 10,000 deep overflowed recursive code after parsing.
 */
export function parseJsonBody(raw: Buffer): unknown {
  const text = decodeUtf8(raw);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TroupeError('HTTP_BAD_JSON');
  }
  assertStorableJson(value);
  return value;
}

/** Throws HTTP_BAD_JSON for a lone surrogate in any string or key, or nesting deeper than `maxDepth`. */
export function assertStorableJson(value: unknown, maxDepth = MAX_JSON_DEPTH): void {
  check(value, 1, maxDepth);
}

function check(value: unknown, depth: number, maxDepth: number): void {
  if (typeof value === 'string') {
    if (!value.isWellFormed()) throw loneSurrogate();
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (depth > maxDepth) throw new TroupeError('HTTP_BAD_JSON', `request body nests deeper than ${maxDepth} levels`, { maxDepth });
  if (Array.isArray(value)) {
    for (const item of value) check(item, depth + 1, maxDepth);
    return;
  }
  for (const key in value) {
    if (!key.isWellFormed()) throw loneSurrogate();
    check((value as Record<string, unknown>)[key], depth + 1, maxDepth);
  }
}

const loneSurrogate = () =>
  new TroupeError('HTTP_BAD_JSON', 'request body holds a lone UTF-16 surrogate escape (\\uD800–\\uDFFF without its pair)');
