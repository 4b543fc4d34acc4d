import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route, HttpRequest, Reply } from '../types.js';
import { route } from '../route.js';
import type { OrgPrincipal, OrgRole } from '../../actors/services/identity/principal.js';
import { findOrg, listMemberships, listProjectAccess } from '../../storage/identity/orgs.js';
import { findOrgMember } from '../../storage/identity/users.js';
import { findApiKey } from '../../storage/identity/credentials.js';
import * as schemas from '../../schemas/identity/http.js';
import { orgPrincipal } from '../principal.js';
import { publicUser } from './public-user.js';
import { provisioningRoutes } from './provisioning.js';
import { loginRoutes } from './login.js';
import { apiKeyRoutes } from './api-keys.js';
import { teamRoutes } from './teams.js';
import { memberRoutes } from './members.js';
import { credentialListRoutes } from './credential-lists.js';

/**
 * Identity routes: provisioning (platform admin, provisioning.ts), login/logout (login.ts), caller context (here),
 * API keys and registration tokens (api-keys.ts) and teams (teams.ts). Writes of credentials go through the org
 * actor (`org/<orgId>`); everything else is a direct, org-scoped read or write of the identity tables.
 */

/** The scopes an org role implies, reported by whoami for users (keys report their own). */
export function scopesOfRole(role: OrgRole): string[] {
  switch (role) {
    case 'owner':
    case 'admin': return ['admin', 'write', 'read'];
    case 'member': return ['write', 'read'];
    case 'viewer': return ['read'];
  }
}

/** The org role a scoped credential acts at, for the org list entry (which must carry a role). */
function roleOfScopes(scopes: readonly string[]): OrgRole {
  return scopes.includes('admin') ? 'admin' : scopes.includes('write') ? 'member' : 'viewer';
}

export async function listOrgs(req: HttpRequest, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  if (p.kind === 'user') {
    const memberships = await listMemberships(deps.db, p.userId);
    return {
      body: {
        orgs: memberships.map((m) => ({ id: m.org.id, name: m.org.name, slug: m.org.slug, role: m.role })),
        activeOrgId: p.orgId,
      },
    };
  }
  const org = await findOrg(deps.db, p.orgId);
  if (!org) throw new TroupeError('NOT_FOUND', 'org not found');
  const role = p.kind === 'runtime' ? 'viewer' : roleOfScopes(p.scopes);
  return { body: { orgs: [{ id: org.id, name: org.name, slug: org.slug, role }], activeOrgId: org.id } };
}

export async function whoami(req: HttpRequest, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  return { body: await deps.auth.contextOf(p, () => loadCallerContext(deps, p)) };
}

/**
 * `user` is the person the credential acts as, which only a user token or session is (decision 0069): the routes that
 * need a person (approval decide, web push) refuse every other credential, and whoami says the same. An API key is
 * named apart, with the user who created it, who is not the caller.
 */
async function loadCallerContext(deps: Deps, p: OrgPrincipal) {
  const org = await findOrg(deps.db, p.orgId);
  if (!org) throw new TroupeError('NOT_FOUND', 'org not found');
  const user = p.kind === 'user' ? await findOrgMember(deps.db, org.id, p.userId) : undefined;
  const key = p.kind === 'apiKey' ? await findApiKey(deps.db, org.id, p.keyId) : undefined;
  const projects = await listProjectAccess(deps.db, org.id, p.kind === 'user' ? p.userId : null);
  const scopes = p.kind === 'user' ? scopesOfRole(p.orgRole) : [...p.scopes];
  return {
    user: user ? publicUser(user) : null,
    apiKey: key ? { id: key.id, name: key.name, createdBy: key.createdBy } : null,
    org: { id: org.id, name: org.name, slug: org.slug, plan: org.plan },
    projects: projects.map((pr) => ({ id: pr.id, name: pr.name, slug: pr.slug, role: pr.role })),
    scopes,
  };
}

export function identityRoutes(): Route<Deps>[] {
  return [
    ...provisioningRoutes(),
    ...loginRoutes(),
    route({
      method: 'get', path: '/api/org/list', auth: 'org', tags: ['identity'],
      summary: 'Orgs of the calling user with their role; for an API key or machine token, its own org with the role its scopes act at',
      responseSchema: schemas.orgListReply, handler: listOrgs,
    }),
    route({
      method: 'get', path: '/api/cli/whoami', auth: 'org', tags: ['identity'],
      summary: 'Caller context. user is the caller for a user token or session, the key\'s creator for an API key, null for a machine token',
      responseSchema: schemas.whoamiReply, handler: whoami,
    }),
    ...apiKeyRoutes(),
    ...credentialListRoutes(),
    ...memberRoutes(),
    ...teamRoutes(),
  ];
}
