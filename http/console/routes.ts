import type { Principal } from '../../actors/services/identity/principal.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { HttpRequest, Reply, Route, TextReply } from '../types.js';
import { firstScreenReads, SIGNED_IN_META } from './app/first-screen.js';
import { pickEncoding, type ConsoleAsset, type ConsoleAssets } from './assets.js';
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

/** What the console's pages ask of the node's services: whether a request's session cookie is signed in. */
export interface ConsoleDeps {
  readonly auth: { resolve(credentials: { cookie?: string | undefined }): Promise<Principal | undefined> };
}

export function consoleRoutes<D extends ConsoleDeps>(assets: ConsoleAssets): Route<D>[] {
  const serve = (path: string) => (req: HttpRequest): Promise<Reply> => Promise.resolve(reply(assets, path, req));
  return [
    ...CONSOLE_PAGES.map((path): Route<D> => ({
      method: 'get', path, auth: 'none', summary: 'The console page', handler: (req, deps) => page(assets, req, deps),
    })),
    { method: 'get', path: '/sw.js', auth: 'none', summary: 'The console service worker', handler: serve('/sw.js') },
    { method: 'get', path: '/favicon.ico', auth: 'none', summary: 'The console icon', handler: serve('/assets/icon.svg') },
    {
      method: 'get', path: '/assets/*', auth: 'none', summary: 'Console scripts, styles and icons',
      handler: (req) => Promise.resolve(reply(assets, req.path, req)),
    },
  ];
}

/**
 * A console page. To a browser whose session cookie is signed in, the shell says so and names the first screen's
 * reads as preload hints: the browser fetches them beside the scripts, and the page starts drawing without a round
 * trip of its own. That page is made per request and never stored (the hints name its own address's filters, the
 * meta that its cookie is signed in); everyone else gets the built file, compressed at build.
 */
async function page(assets: ConsoleAssets, req: HttpRequest, deps: ConsoleDeps): Promise<Reply> {
  const shell = assets.files.get('/index.html');
  if (shell === undefined || !(await signedIn(req, deps))) {
    const built = reply(assets, '/index.html', req);
    return { ...built, headers: { ...built.headers, vary: 'accept-encoding, cookie' } };
  }
  return {
    kind: 'text', contentType: shell.contentType, body: signedInShell(shell, firstScreenReads(req.path, req.query)),
    headers: { ...consoleHeaders(false, undefined), 'cache-control': 'private, no-store', vary: 'accept-encoding, cookie' },
  };
}

async function signedIn(req: HttpRequest, deps: ConsoleDeps): Promise<boolean> {
  const cookie = req.headers.cookie;
  if (cookie === undefined) return false;
  try {
    return (await deps.auth.resolve({ cookie }))?.kind === 'user';
  } catch {
    // An invalid cookie, or a check that failed: the built page, which asks the node itself and shows what it says.
    return false;
  }
}

function signedInShell(shell: ConsoleAsset, reads: readonly string[]): Buffer {
  const hints = reads.map((read) => `<link rel="preload" as="fetch" crossorigin="anonymous" href="${escapeAttribute(read)}">`);
  const html = shell.identity.toString('utf8').replace('</title>\n', `</title>\n<meta name="${SIGNED_IN_META}" content="yes">\n${hints.join('\n')}\n`);
  return Buffer.from(html, 'utf8');
}

const escapeAttribute = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function reply(assets: ConsoleAssets, path: string, req: HttpRequest): TextReply {
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
