import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { HttpRequest } from '../types.js';

/** What the single sign-on settings (sso.ts) and the sign-in (sso-sign-in.ts) both name (decision 0083). */
export const CALLBACK_PATH = '/auth/oidc/callback';

/** The org's client secret is sealed under this context: it opens for that org's sign-ins only. */
export const clientSecretSealContext = (orgId: string): string => `${orgId}:sso:client-secret`;

/**
 * The callback URL providers send the browser back to, which each org registers at its provider:
 * `TROUPE_PUBLIC_URL` + the callback path, or (without one) the request's own host, checked to be a bare host[:port],
 * as the integration OAuth routes do.
 */
export function ssoRedirectUri(req: Pick<HttpRequest, 'headers'>, deps: Deps): string {
  if (deps.config.publicUrl) return `${deps.config.publicUrl}${CALLBACK_PATH}`;
  const host = req.headers.host ?? '';
  if (!/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253})(:\d{1,5})?$/.test(host)) {
    throw new TroupeError('VALIDATION_FAILED', 'Host header is not a host name; set TROUPE_PUBLIC_URL', { field: 'host' });
  }
  return `${deps.config.behindTls ? 'https' : 'http'}://${host}${CALLBACK_PATH}`;
}
