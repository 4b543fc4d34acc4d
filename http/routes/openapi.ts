import { errorRegistry } from '../../ops/kernel/errors.js';
import { buildOpenApi } from '../../schemas/openapi.js';
import type { Route } from '../types.js';

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
    handler: async () => {
      document ??= JSON.stringify(buildOpenApi(routes(), { errorCodes: Object.keys(errorRegistry) }));
      return { kind: 'text', body: document, contentType: 'application/json; charset=utf-8' };
    },
  };
}
