import { TroupeError } from '../ops/kernel/errors.js';
import type { Principal } from '../actors/services/identity/principal.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Writes made with the browser session cookie must come from a page of this origin. The cookie is SameSite=Lax, and
 * JSON routes refuse other content types (a cross-site form cannot send JSON without a CORS preflight, which this
 * server never grants), but routes without a body (stop, rollback) and sibling sites on the same registrable domain
 * are not covered by either. Browsers mark every request with `Sec-Fetch-Site`, and older ones send `Origin` on
 * every non-GET request: one of them must say "same origin". Bearer credentials are never sent by a browser on its
 * own, so they need no such check.
 */
export function assertSameOriginWrite(method: string, headers: Readonly<Record<string, string>>, principal: Principal | undefined): void {
  if (principal?.kind !== 'user' || principal.via !== 'cookie' || SAFE_METHODS.has(method)) return;
  const site = headers['sec-fetch-site'];
  if (site !== undefined) {
    if (site === 'same-origin') return;
    throw refused(`a ${site} request cannot write with the session cookie`);
  }
  const origin = headers.origin;
  if (origin !== undefined && origin !== 'null' && sameHost(origin, headers.host)) return;
  throw refused('a write with the session cookie must come from this origin (Origin or Sec-Fetch-Site header)');
}

function sameHost(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    return new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}

const refused = (message: string) => new TroupeError('AUTH_FORBIDDEN', message, { reason: 'cross-site' });
