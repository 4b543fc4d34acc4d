import { errorRegistry } from '../../ops/kernel/errors.js';
import { buildOpenApi } from '../../schemas/openapi.js';
import type { Route } from '../types.js';

/**
 * The document `GET /api/openapi.json` serves, as text. `npm run client:generate` builds the typed client from this
 * same function, and a test checks the checked-in client against what a started node serves.
 */
export function openApiDocument(routes: readonly Route<any>[]): string {
  return JSON.stringify(buildOpenApi(routes, { errorCodes: Object.keys(errorRegistry) }));
}

/**
 * `GET /api/openapi.json`. The table is read on first request (not at construction) so the document includes
 * every route, its own included, and is then kept: the table does not change while the node runs.
 */
export function openApiRoute<D>(routes: () => readonly Route<any>[]): Route<D> {
  let document: string | undefined;
  return {
    method: 'get',
    path: '/api/openapi.json',
    auth: 'none',
    summary: 'This OpenAPI document',
    tags: ['meta'],
    responseSchema: {
      type: 'object', required: ['openapi', 'info', 'paths'], description: 'An OpenAPI 3.1 document',
      properties: { openapi: { type: 'string' }, info: { type: 'object' }, servers: { type: 'array', items: { type: 'object' } }, paths: { type: 'object' } },
    },
    handler: async () => {
      document ??= openApiDocument(routes());
      return { kind: 'text', body: document, contentType: 'application/json; charset=utf-8' };
    },
  };
}
