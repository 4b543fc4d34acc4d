import type { ErrorObject, ValidateFunction } from 'ajv';
import { ajv, compileSchema, fieldOf, queryAjv } from '../schemas/ajv.js';
import { TroupeError, type ErrorCode } from '../ops/kernel/errors.js';
import type { Route } from './types.js';

export interface RouteValidators {
  body: ValidateFunction | undefined;
  query: ValidateFunction | undefined;
}

/** Compiled at start-up, so a broken schema stops the node before it takes traffic rather than on first use. */
export function compileRouteValidators(route: Route<any>): RouteValidators {
  try {
    return {
      body: route.bodySchema ? compileSchema(ajv, route.bodySchema) : undefined,
      query: route.querySchema ? compileSchema(queryAjv, route.querySchema) : undefined,
    };
  } catch (err) {
    throw new Error(`route ${route.method.toUpperCase()} ${route.path}: schema does not compile: ${(err as Error).message}`, { cause: err });
  }
}

export function validateBody(validate: ValidateFunction | undefined, body: unknown): void {
  if (validate && !validate(body)) throw validationError('VALIDATION_FAILED', 'body', validate.errors ?? []);
}

/**
 * Query parameters are checked as an object of their first values; coercion applies to that copy only, the
 * handler still reads the URLSearchParams it was given.
 */
export function validateQuery(validate: ValidateFunction | undefined, query: URLSearchParams): void {
  if (!validate) return;
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
