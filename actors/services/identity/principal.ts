/**
 * The principal types are declared in schemas/ (storage records carry roles too); this module re-exports them under
 * their old names and adds the helpers the domain uses.
 */
export { orgRoles, projectRoles, type OrgRole, type ProjectRole, type Principal, type OrgPrincipal } from '../../../schemas/identity/principal.js';
import type { OrgRole, Principal } from '../../../schemas/identity/principal.js';

export const isHuman = (p: Principal): p is Extract<Principal, { kind: 'user' }> => p.kind === 'user';

const rank: Record<OrgRole, number> = { owner: 4, admin: 3, member: 2, viewer: 1 };
export const roleAtLeast = (role: OrgRole, floor: OrgRole): boolean => rank[role] >= rank[floor];
