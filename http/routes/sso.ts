import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgPrincipal } from '../../actors/services/identity/principal.js';
import { OutboundRefused } from '../../actors/services/integrations/outbound/index.js';
import { deleteOrgSso, putOrgSso, readOrgSso, type OrgSso } from '../../storage/identity/sso.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import type { HttpRequest, Route } from '../types.js';
import { ssoDeletedReply, ssoSettingsBody, ssoSettingsReply } from './sso-schemas.js';
import { clientSecretSealContext, DOMAIN, domainView, onOwnOrg, ssoRedirectUri } from './sso-common.js';

/**
 * An org's single sign-on settings (issue 37 §1, decision 0083): `PUT|GET|DELETE /api/org/{orgId}/sso`. Changing
 * them decides who may enter the org and at which role, so PUT and DELETE are the owners' (a user token or session
 * of an owner; admins, members and every key get 403); admins and owners read them. The client secret is sealed
 * like the other credentials and never returned. Another org's id is 404.
 */
const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * The issuer as OpenID Connect Discovery takes it: https without query or fragment; plain http only on a loopback
 * address (a provider on the same machine, as in tests). The outbound guard then refuses internal addresses the
 * operator did not allow; a name that does not resolve now is left to the sign-in, which checks it again.
 */
async function checkedIssuer(deps: Deps, raw: string): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidIssuer('not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.test(url.hostname))) throw invalidIssuer('must be https (http only on a loopback address)');
  if (url.username !== '' || url.password !== '') throw invalidIssuer('must not carry credentials');
  if (url.search !== '' || url.hash !== '' || raw.includes('?') || raw.includes('#')) throw invalidIssuer('must have no query or fragment');
  try {
    await deps.services.outbound.vet(url);
  } catch (err) {
    if (err instanceof OutboundRefused && err.reason !== 'dns') throw invalidIssuer(err.message);
    if (!(err instanceof OutboundRefused)) throw err;
  }
  // As entered, less a trailing slash: the ID token's `iss` is compared with the discovered issuer, which must equal this.
  return raw.replace(/\/+$/, '');
}

const invalidIssuer = (why: string) => new TroupeError('VALIDATION_FAILED', `issuer: ${why}`, { field: 'issuer' });

function view(req: HttpRequest, deps: Deps, sso: OrgSso) {
  return {
    orgId: sso.orgId, issuer: sso.issuer, clientId: sso.clientId, clientSecretSet: true as const, emailDomains: [...sso.emailDomains],
    domains: sso.domains.map(domainView),
    groupsClaim: sso.groupsClaim, roleMap: { ...sso.roleMap }, defaultRole: sso.defaultRole, enforce: sso.enforce,
    redirectUri: ssoRedirectUri(req, deps), updatedAt: sso.updatedAt, updatedBy: sso.updatedBy,
  };
}

export function ssoSettingsRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'put', path: '/api/org/:orgId/sso', auth: 'org', tags: ['identity', 'sso'],
      summary: "Set the org's single sign-on at an OpenID provider: issuer, client, email domains, group → role map (owners only; 409 when another org verified a domain)",
      description: 'The client secret is sealed with the master key and never returned. Each domain of `emailDomains` is `pending` '
        + 'until verified by its DNS TXT record (`domains` answers the record; `POST /api/org/{orgId}/sso/domains/{domain}/verify`); a domain '
        + 'kept from the previous settings keeps its status and record. A person signing in with an email of a verified domain is sent to the issuer (authorization code with PKCE); the callback `GET /auth/oidc/callback` provisions them '
        + 'and sets their org role from the `groupsClaim` groups through `roleMap` at every sign-in (the highest wins; none mapped: '
        + '`defaultRole`, `null` refusing them; an owner is never demoted by a missing claim, nor while the only owner). With '
        + '`enforce`, password sign-in to this org by its verified domains\' people answers 403 `SSO_REQUIRED`. Audited as `sso.configured`.',
      bodySchema: ssoSettingsBody, responseSchema: ssoSettingsReply,
      authorize: onOwnOrg(true),
      async handler(req, deps) {
        const p: OrgPrincipal = orgPrincipal(req);
        const issuer = await checkedIssuer(deps, req.body.issuer);
        const emailDomains = [...new Set(req.body.emailDomains.map((d) => d.toLowerCase()))];
        const notDomain = emailDomains.find((d) => !DOMAIN.test(d));
        if (notDomain !== undefined) {
          throw new TroupeError('VALIDATION_FAILED', `emailDomains: ${notDomain} is not a domain of two or more labels`, { field: 'emailDomains' });
        }
        const at = new Date(deps.clock.now());
        const settings = {
          orgId: p.orgId, issuer, clientId: req.body.clientId, emailDomains,
          sealedClientSecret: deps.secrets.seal(req.body.clientSecret, clientSecretSealContext(p.orgId)),
          groupsClaim: req.body.groupsClaim ?? 'groups', roleMap: { ...(req.body.roleMap ?? {}) },
          defaultRole: req.body.defaultRole === undefined ? 'member' as const : req.body.defaultRole, enforce: req.body.enforce ?? false,
          updatedBy: requesterOf(p), at,
        };
        await deps.db.transaction(async (trx) => {
          const { created } = await putOrgSso(trx, settings);
          await deps.services.audit.record({
            orgId: p.orgId, type: 'sso.configured', actor: requesterOf(p), subject: p.orgId, at,
            payload: {
              created, issuer, clientId: settings.clientId, emailDomains, groupsClaim: settings.groupsClaim, roleMap: settings.roleMap,
              defaultRole: settings.defaultRole, enforce: settings.enforce,
            },
          }, trx);
        });
        const stored = await readOrgSso(deps.db, p.orgId);
        if (!stored) throw new TroupeError('CONFLICT', 'the single sign-on settings were removed while being written');
        return { body: view(req, deps, stored) };
      },
    }),
    route({
      method: 'get', path: '/api/org/:orgId/sso', auth: 'org', tags: ['identity', 'sso'],
      summary: "The org's single sign-on settings, never the client secret (admins and owners; 404 when none are set)",
      responseSchema: ssoSettingsReply,
      authorize: onOwnOrg(false),
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const sso = await readOrgSso(deps.db, p.orgId);
        if (!sso) throw new TroupeError('NOT_FOUND', 'this org has no single sign-on');
        return { body: view(req, deps, sso) };
      },
    }),
    route({
      method: 'delete', path: '/api/org/:orgId/sso', auth: 'org', tags: ['identity', 'sso'],
      summary: "Remove the org's single sign-on: its domains sign in with passwords again, sign-ins under way are void (owners only; 404 when none is set)",
      responseSchema: ssoDeletedReply,
      authorize: onOwnOrg(true),
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const at = new Date(deps.clock.now());
        const removed = await deps.db.transaction(async (trx) => {
          const before = await readOrgSso(trx, p.orgId);
          if (!before || !(await deleteOrgSso(trx, p.orgId))) return false;
          await deps.services.audit.record({
            orgId: p.orgId, type: 'sso.removed', actor: requesterOf(p), subject: p.orgId, at,
            payload: { issuer: before.issuer, emailDomains: [...before.emailDomains] },
          }, trx);
          return true;
        });
        if (!removed) throw new TroupeError('NOT_FOUND', 'this org has no single sign-on');
        return { body: { deleted: true as const } };
      },
    }),
  ];
}
