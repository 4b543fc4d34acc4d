/**
 * Reads the node's own OpenAPI document into a flat list of operations, so cross-cutting tests cover every route,
 * including routes added after the test was written, without a hand-kept list. Also derives request bodies from a
 * route's JSON Schema: a plausible sample, and hostile variants of it (wrong types, huge strings).
 */

import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';

export type JsonSchema = Record<string, unknown>;

export interface WalkedOperation {
  /** Upper case: GET, POST, … */
  readonly method: string;
  /** The OpenAPI template: `/api/workflows/{id}`. */
  readonly template: string;
  /** Security scheme names the operation accepts; empty means the document declares it public. */
  readonly schemes: readonly string[];
  readonly pathParams: readonly string[];
  readonly queryParams: readonly { name: string; required: boolean; schema: JsonSchema }[];
  /** Absent when the operation takes no body. */
  readonly body?: { readonly kind: 'json' | 'form' | 'raw'; readonly schema: JsonSchema | undefined };
  /** The success reply is an event stream: a request that succeeds never ends by itself. */
  readonly sse: boolean;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

export function walkOpenApi(document: any): WalkedOperation[] {
  const operations: WalkedOperation[] = [];
  for (const [template, item] of Object.entries<Record<string, any>>(document?.paths ?? {})) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!HTTP_METHODS.includes(method)) continue;
      const parameters: any[] = op.parameters ?? [];
      const content: Record<string, any> | undefined = op.requestBody?.content;
      let body: WalkedOperation['body'];
      if (content) {
        const types = Object.keys(content);
        const kind = types.includes('application/x-www-form-urlencoded') ? 'form' : types.includes('application/json') ? 'json' : 'raw';
        body = { kind, schema: kind === 'raw' ? undefined : content['application/json']?.schema };
      }
      const successes = Object.entries<any>(op.responses ?? {}).filter(([status]) => /^2\d\d$/.test(status));
      operations.push({
        method: method.toUpperCase(),
        template,
        schemes: (op.security ?? []).flatMap((requirement: Record<string, unknown>) => Object.keys(requirement)),
        pathParams: [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, required: p.required === true, schema: p.schema ?? {} })),
        ...(body ? { body } : {}),
        sse: successes.some(([, r]) => r?.content && 'text/event-stream' in r.content),
      });
    }
  }
  return operations;
}

/** Fills a template with already percent-encoded segments, so hostile values reach the server byte for byte. */
export function fillPath(template: string, segmentFor: (param: string) => string): string {
  return template.replace(/\{([^}]+)\}/g, (_m, name: string) => segmentFor(name));
}

export const label = (op: WalkedOperation): string => `${op.method} ${op.template}`;

/**
 * A value that satisfies common schema shapes (enum, const, formats, lengths, bounds, required members). It is a
 * best effort, not a generator for every schema: a pattern it cannot meet yields a plain string, and the caller
 * treats the sample as "plausible", not "valid". URIs point at `uriBase`, so nothing leaves the loopback interface.
 */
export function sampleOf(schema: JsonSchema | undefined, uriBase: string, depth = 0, hints: Readonly<Record<string, unknown>> = {}): unknown {
  if (!schema || depth > 6) return undefined;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ('default' in schema && schema.default !== null) return schema.default;
  for (const key of ['oneOf', 'anyOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) return sampleOf(options[0] as JsonSchema, uriBase, depth + 1);
  }
  // `allOf` beside `properties` only adds conditions (`if/then` per variant); the object branch samples the members.
  if (Array.isArray(schema.allOf) && !schema.properties) {
    return Object.assign({}, ...schema.allOf.map((s) => sampleOf(s as JsonSchema, uriBase, depth + 1)).filter((v) => typeof v === 'object'));
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'string': return stringSample(schema, uriBase);
    case 'integer':
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : 1;
      const max = typeof schema.maximum === 'number' ? schema.maximum : min;
      return Math.min(Math.max(min, 1), max);
    }
    case 'boolean': return true;
    case 'array': {
      const count = typeof schema.minItems === 'number' ? schema.minItems : 1;
      return Array.from({ length: Math.min(count, 3) }, () => sampleOf(schema.items as JsonSchema | undefined, uriBase, depth + 1) ?? 'x');
    }
    case 'object':
    default: {
      if (type === undefined && !schema.properties) return undefined;
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const out: Record<string, unknown> = {};
      const valueOf = (name: string) => {
        if (depth === 0 && name in hints) return hints[name];
        const value = sampleOf(properties[name], uriBase, depth + 1);
        return value === undefined ? 'x' : value;
      };
      // `if/then` as used for "action: start requires goal": the sample takes the first enum value, so the `then` branch.
      const then = schema.then as JsonSchema | undefined;
      for (const name of [...((schema.required ?? []) as string[]), ...((then?.required ?? []) as string[])]) out[name] = valueOf(name);
      const minProperties = typeof schema.minProperties === 'number' ? schema.minProperties : 0;
      for (const name of Object.keys(properties)) {
        if (Object.keys(out).length >= minProperties) break;
        if (typeof properties[name] === 'object') out[name] = valueOf(name);
      }
      return out;
    }
  }
}

function stringSample(schema: JsonSchema, uriBase: string): string {
  const min = typeof schema.minLength === 'number' ? schema.minLength : 1;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
  const byFormat: Record<string, string> = {
    email: `hostile-${Math.random().toString(36).slice(2, 8)}@example.test`,
    uri: `${uriBase}/`, url: `${uriBase}/`, 'uri-reference': `${uriBase}/`,
    uuid: '00000000-0000-4000-8000-000000000000',
    'date-time': '2024-01-01T00:00:00Z', date: '2024-01-01',
  };
  const candidates = [
    typeof schema.format === 'string' ? byFormat[schema.format] : undefined,
    'hostile-sample', 'abc', 'x', 'ENG-1', 'a1', 'A', '1', 'static', 'manual', `${uriBase}/`,
    `sha256:${'0'.repeat(64)}`, `whsec_${'A'.repeat(32)}`,
  ].filter((c): c is string => c !== undefined);
  const pattern = typeof schema.pattern === 'string' ? safeRegExp(schema.pattern) : undefined;
  for (const candidate of candidates) {
    const padded = candidate.length < min ? candidate + 'x'.repeat(min - candidate.length) : candidate;
    if (padded.length <= max && (!pattern || pattern.test(padded))) return padded;
  }
  return 'x'.repeat(Math.min(Math.max(min, 1), Number.isFinite(max) ? max : 1));
}

const checker = new Ajv({ strict: false, allErrors: false });
((addFormatsModule as unknown as { default?: unknown }).default as ((a: Ajv) => Ajv) ?? (addFormatsModule as unknown as (a: Ajv) => Ajv))(checker);

/** Whether a sample satisfies its schema, i.e. whether hostile variants of it reach the handler, not just the validator. */
export function satisfies(schema: JsonSchema | undefined, value: unknown): boolean {
  if (!schema) return true;
  try { return checker.validate(schema, value) as boolean; } catch { return false; }
}

function safeRegExp(pattern: string): RegExp | undefined {
  try { return new RegExp(pattern, 'u'); } catch { return undefined; }
}

/** A value of a type the schema does not allow; undefined when the schema allows every type. */
export function wrongTypeFor(schema: JsonSchema | undefined): unknown {
  const types = new Set(Array.isArray(schema?.type) ? schema!.type as string[] : schema?.type ? [schema.type as string] : []);
  if (types.size === 0) return undefined;
  if (!types.has('object')) return { hostile: { nested: true } };
  if (!types.has('array')) return ['hostile'];
  if (!types.has('boolean')) return true;
  if (!types.has('string')) return 'hostile';
  return undefined;
}

/** Names of the body's top-level string members, for the huge-string variant. */
export function stringMembersOf(schema: JsonSchema | undefined): string[] {
  const properties = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  return Object.entries(properties)
    .filter(([, s]) => s.type === 'string' || (Array.isArray(s.type) && s.type.includes('string')))
    .filter(([, s]) => !Array.isArray(s.enum) && !('const' in s))
    .map(([name]) => name);
}

export function requiredOf(schema: JsonSchema | undefined): { name: string; schema: JsonSchema | undefined }[] {
  const properties = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  return ((schema?.required ?? []) as string[]).map((name) => ({ name, schema: properties[name] }));
}
