import type { Deps } from '../../actors/services/deps.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';
import { listApiKeys, listRegistrationTokens } from '../../storage/identity/org-admin.js';
import { apiKeysReply, registrationTokensReply } from '../../schemas/identity/admin-http.js';
import { assertOwnOrg, orgPrincipal } from '../principal.js';

/**
 * The org's API keys and registration tokens as listed for those who issue and revoke them (`manage-keys`: admins,
 * owners, admin-scoped keys): names, prefixes, scopes or projects, when made and revoked; never a secret or a hash,
 * which exist only in the reply that issued them. A path orgId that is not the caller's is 403 TENANT_MISMATCH.
 */
const manageKeys: RouteAuthorization<Deps, unknown, undefined> = {
  find: async (req, _deps, p) => { assertOwnOrg(req, p); },
  action: 'manage-keys',
  resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }),
};

export function credentialListRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/org/:orgId/keys', auth: 'org', tags: ['api-keys'],
      summary: "The org's API keys, newest first, revoked ones included (admin/owner); never the key itself",
      responseSchema: apiKeysReply, authorize: manageKeys,
      async handler(req, deps) {
        return { body: { keys: await listApiKeys(deps.db, orgPrincipal(req).orgId) } };
      },
    }),
    route({
      method: 'get', path: '/api/org/:orgId/registration-tokens', auth: 'org', tags: ['daemons'],
      summary: "The org's daemon registration tokens, newest first, revoked ones included (admin/owner); never the token itself",
      responseSchema: registrationTokensReply, authorize: manageKeys,
      async handler(req, deps) {
        return { body: { registrationTokens: await listRegistrationTokens(deps.db, orgPrincipal(req).orgId) } };
      },
    }),
  ];
}
