import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgPrincipal } from '../../actors/services/identity/principal.js';
import { txtName, txtValue } from '../../actors/services/sso/domain-txt.js';
import type { SsoDomainClaim } from '../../storage/identity/sso.js';
import type { HttpRequest, RouteAuthorization } from '../types.js';

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

/** A domain of two or more labels, lower case: no wildcard, port, IP literal, trailing dot or underscore. */
export const DOMAIN = /^(?=.{3,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** A claimed domain as the owner sees it: whether it is proven, and the TXT record that proves it (decision 0091). */
export function domainView(claim: SsoDomainClaim) {
  return {
    domain: claim.domain, status: claim.status, txtName: txtName(claim.domain), txtValue: txtValue(claim.verificationToken),
    verifiedAt: claim.verifiedAt,
  };
}

/**
 * The caller's own org (another org's id is 404, as for any resource of another org), then Cedar's manage-org; with
 * `ownerOnly`, a user token or session of an owner (admins, members and every key 403).
 */
export function onOwnOrg(ownerOnly: boolean): RouteAuthorization<Deps> {
  return {
    async find(req, _deps, p: OrgPrincipal) {
      if (req.params.orgId !== p.orgId) throw new TroupeError('NOT_FOUND', 'org not found');
      if (ownerOnly && !(p.kind === 'user' && p.orgRole === 'owner')) {
        throw new TroupeError('AUTH_FORBIDDEN', "only an owner of the org changes its single sign-on (a user token or session)");
      }
    },
    action: 'manage-org',
    resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }),
  };
}
