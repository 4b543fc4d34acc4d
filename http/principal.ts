import { TroupeError } from '../ops/kernel/errors.js';
import type { OrgPrincipal, Principal } from '../actors/services/identity/principal.js';
import type { HttpRequest } from './types.js';

/**
 * The caller of an org route (auth 'org', 'human', 'runtime' or 'any'), which the auth step has already proved to be
 * an org credential; reaching here with none or the admin is a route declared with the wrong `auth`, not a client's error.
 */
export function orgPrincipal(req: Pick<HttpRequest, 'principal'>): OrgPrincipal {
  return asOrgPrincipal(req.principal);
}

export function asOrgPrincipal(p: Principal | undefined): OrgPrincipal {
  if (!p || p.kind === 'admin') throw new TroupeError('INTERNAL', 'route reached without an org principal');
  return p;
}

/** Who asked, as recorded on sessions, prompts and mutations. */
export function requesterOf(p: Principal): string {
  switch (p.kind) {
    case 'user': return `user:${p.userId}`;
    case 'apiKey': return `apiKey:${p.keyId}`;
    case 'machine': return `machine:${p.clientId}`;
    case 'runtime': return `worker:${p.workerId}`;
    case 'admin': return 'admin';
  }
}

/** Routes under `/api/org/:orgId/…` name the caller's own org, or answer 403 TENANT_MISMATCH. */
export function assertOwnOrg(req: Pick<HttpRequest, 'params'>, p: OrgPrincipal): void {
  if (req.params.orgId !== p.orgId) throw new TroupeError('TENANT_MISMATCH');
}
