import { orgRoles, type OrgRole } from '../../../schemas/identity/principal.js';

/**
 * Which org role a person signing in through the org's provider gets (issue 37 §1, decision 0083). Pure: the
 * sign-in reads the claims and the person's current role and stores what this says.
 */
const rank: Readonly<Record<OrgRole, number>> = { viewer: 0, member: 1, admin: 2, owner: 3 };

export const isOrgRole = (value: unknown): value is OrgRole => typeof value === 'string' && (orgRoles as readonly string[]).includes(value);

/**
 * The groups the ID token names under `claim`: a list of strings, or one string (some providers send a lone group
 * so); undefined when the claim is absent or of another shape, which counts as saying nothing.
 */
export function groupsOf(claims: Readonly<Record<string, unknown>>, claim: string): string[] | undefined {
  const value = claims[claim];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((g): g is string => typeof g === 'string');
  return undefined;
}

/** The highest role any of the groups maps to; undefined when none does (or the claim was absent). */
export function mappedRole(groups: readonly string[] | undefined, roleMap: Readonly<Record<string, OrgRole>>): OrgRole | undefined {
  let best: OrgRole | undefined;
  for (const group of groups ?? []) {
    const role = Object.hasOwn(roleMap, group) ? roleMap[group] : undefined;
    if (role !== undefined && (best === undefined || rank[role] > rank[best])) best = role;
  }
  return best;
}

export type RoleDecision = { readonly role: OrgRole } | { readonly refused: string };

/**
 * The role at this sign-in. A mapped group decides; without one the org's default role does, or the sign-in is
 * refused when the org has none. An owner keeps the role when no group maps (a group claim that went missing, a
 * provider that stopped sending it), and is never demoted while the only owner: the org would be left without
 * anyone who can change its single sign-on.
 */
export function roleAtSignIn(input: {
  readonly mapped: OrgRole | undefined;
  readonly defaultRole: OrgRole | null;
  readonly current: OrgRole | undefined;
  readonly otherOwners: number;
}): RoleDecision {
  const { mapped, current } = input;
  if (current === 'owner' && (mapped === undefined || input.otherOwners === 0)) return { role: 'owner' };
  if (mapped !== undefined) return { role: mapped };
  if (input.defaultRole === null) return { refused: 'no group of this person maps to a role in the org, and the org has no default role' };
  return { role: input.defaultRole };
}
