import type { ErrorObject, ValidateFunction } from 'ajv';
import { ajv, compileSchema, fieldOf, queryAjv } from '../schemas/ajv.js';
import { TroupeError, type ErrorCode } from '../ops/kernel/errors.js';
import type { Route } from './types.js';

/** A route's validator, compiled when the route is first called. */
export type LazyValidator = () => ValidateFunction;

export interface RouteValidators {
  body: LazyValidator | undefined;
  query: LazyValidator | undefined;
  /** Query parameters the schema types as integers: their text must be plain digits before ajv coerces it. */
  integerParams: readonly string[];
}

/**
 * Compiling every route's schemas at start-up took about a tenth of a second of the node's start (decision 0043), so
 * each compiles on the route's first call. A broken schema is still caught before it ships: the route-table test
 * compiles every route's validators with `compileRouteValidatorsNow`.
 */
export function compileRouteValidators(route: Route<any>): RouteValidators {
  return {
    body: route.bodySchema ? once(() => compileFor(route, ajv, route.bodySchema!)) : undefined,
    query: route.querySchema ? once(() => compileFor(route, queryAjv, route.querySchema!)) : undefined,
    integerParams: integerParamsOf(route.querySchema),
  };
}

function integerParamsOf(schema: Record<string, unknown> | undefined): string[] {
  const properties = (schema?.properties ?? {}) as Record<string, { type?: unknown }>;
  return Object.entries(properties)
    .filter(([, p]) => p.type === 'integer' || (Array.isArray(p.type) && p.type.includes('integer')))
    .map(([name]) => name);
}

/**
 * Ajv's coercion reads query text with `Number`, which takes `1e309` (Infinity, which passes `integer` and
 * `maximum`), `0x10` and ` 7 `; handlers then read the same text with `Number` and an Infinity limit dropped the SQL
 * LIMIT. An integer parameter is therefore plain decimal digits (an optional minus), at most 15 of them.
 */
const PLAIN_INTEGER = /^-?[0-9]{1,15}$/;

/** Compiles both of a route's validators at once; throws naming the route when a schema does not compile. */
export function compileRouteValidatorsNow(route: Route<any>): void {
  const validators = compileRouteValidators(route);
  validators.body?.();
  validators.query?.();
}

function compileFor(route: Route<any>, instance: typeof ajv, schema: Record<string, unknown>): ValidateFunction {
  try {
    return compileSchema(instance, schema);
  } catch (err) {
    throw new Error(`route ${route.method.toUpperCase()} ${route.path}: schema does not compile: ${(err as Error).message}`, { cause: err });
  }
}

function once(compile: () => ValidateFunction): LazyValidator {
  let compiled: ValidateFunction | undefined;
  return () => (compiled ??= compile());
}

export function validateBody(validator: LazyValidator | undefined, body: unknown): void {
  if (!validator) return;
  const validate = validator();
  if (!validate(body)) throw validationError('VALIDATION_FAILED', 'body', validate.errors ?? []);
}

/**
 * Query parameters are checked as an object of their first values; coercion applies to that copy only, the
 * handler still reads the URLSearchParams it was given.
 */
export function validateQuery(validator: LazyValidator | undefined, query: URLSearchParams, integerParams: readonly string[] = []): void {
  if (!validator) return;
  for (const name of integerParams) {
    for (const value of query.getAll(name)) {
      if (!PLAIN_INTEGER.test(value)) {
        throw new TroupeError('HTTP_BAD_QUERY', `query parameter '${name}' must be a whole number in decimal digits`, { field: name });
      }
    }
  }
  const validate = validator();
  const values: Record<string, string> = {};
  for (const [key, value] of query) if (!(key in values)) values[key] = value;
  if (!validate(values)) throw validationError('HTTP_BAD_QUERY', 'query', validate.errors ?? []);
}

function validationError(code: ErrorCode, where: 'body' | 'query', errors: readonly ErrorObject[]): TroupeError {
  const first = errors[0];
  const field = first ? fieldOf(first) : '';
  const what = first?.keyword === 'required' ? 'is required' : first?.keyword === 'additionalProperties' ? 'is not allowed' : first?.message ?? 'is invalid';
  const message = field === '' ? `${where} ${what}` : `${where === 'query' ? 'query parameter' : 'field'} '${field}' ${what}`;
  return new TroupeError(code, message, {
    field,
    errors: errors.map((e) => ({ field: fieldOf(e), keyword: e.keyword, message: e.message ?? '' })),
  });
}
