import { TroupeError } from '../../ops/kernel/errors.js';
import type { HttpRequest, Reply, Route } from '../types.js';
import { pickEncoding, type ConsoleAssets } from './assets.js';
import { consoleHeaders } from './headers.js';

/**
 * The console's pages, served by every node at `/` beside the API. Each client-side page path answers the same
 * shell (the page routes in the browser), so a link to `/sessions/abc` works when pasted. Not part of the API,
 * so not in the OpenAPI document; anything else outside `/api` and `/v1` stays a JSON 404.
 */
export const CONSOLE_PAGES = [
  '/', '/sign-in', '/fleet', '/sessions', '/sessions/:id', '/approvals', '/approvals/:id', '/workflows', '/workflows/:id', '/workflows/new', '/workflows/builder', '/workflows/:id/edit',
  '/policies', '/policies/:id', '/incidents', '/audit',
  '/settings', '/settings/members', '/settings/api-keys', '/settings/registration-tokens', '/settings/integrations', '/settings/budgets',
] as const;

export function consoleRoutes<D>(assets: ConsoleAssets): Route<D>[] {
  const serve = (path: string) => (req: HttpRequest): Promise<Reply> => Promise.resolve(reply(assets, path, req));
  return [
    ...CONSOLE_PAGES.map((path): Route<D> => ({
      method: 'get', path, auth: 'none', summary: 'The console page', handler: serve('/index.html'),
    })),
    { method: 'get', path: '/sw.js', auth: 'none', summary: 'The console service worker', handler: serve('/sw.js') },
    { method: 'get', path: '/favicon.ico', auth: 'none', summary: 'The console icon', handler: serve('/assets/icon.svg') },
    {
      method: 'get', path: '/assets/*', auth: 'none', summary: 'Console scripts, styles and icons',
      handler: (req) => Promise.resolve(reply(assets, req.path, req)),
    },
  ];
}

function reply(assets: ConsoleAssets, path: string, req: HttpRequest): Reply {
  const asset = assets.files.get(path);
  if (asset === undefined) {
    if (assets.missing !== undefined && path === '/index.html') {
      return { kind: 'text', status: 503, contentType: 'text/plain; charset=utf-8', body: `${assets.missing}\n`, headers: consoleHeaders(false, undefined) };
    }
    throw new TroupeError('ROUTE_NOT_FOUND', 'no such console file');
  }
  const { body, encoding } = pickEncoding(asset, req.headers['accept-encoding']);
  return { kind: 'text', contentType: asset.contentType, body, headers: consoleHeaders(asset.immutable, encoding) };
}
