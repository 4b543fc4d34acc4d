import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { OrgRole } from '../../schemas/identity/principal.js';
import { ensureUser, setOrgRole } from './orgs.js';
import { toUser, type UserRecord } from './rows.js';

/**
 * The person a single sign-on vouched for, made a member of the org with the role `decide` gives, in one
 * transaction (decision 0083). A new user takes their names and picture from the claims; an existing user keeps
 * theirs (the user record is shared by every org the person is in, and one org's provider does not rename them
 * for the others). `decide` sees the current role and how many other owners the org has.
 */
export interface SsoProfile {
  readonly email: string;
  readonly firstName: string | undefined;
  readonly lastName: string | undefined;
  readonly profilePictureUrl: string | undefined;
}

export type SsoMembership =
  | { readonly refused: string; readonly user: UserRecord | undefined }
  | { readonly user: UserRecord; readonly userCreated: boolean; readonly before: OrgRole | undefined; readonly after: OrgRole };

export async function signInSsoMember(
  db: Knex, orgId: string, profile: SsoProfile,
  decide: (current: OrgRole | undefined, otherOwners: number) => { role: OrgRole } | { refused: string },
): Promise<SsoMembership> {
  return db.transaction(async (trx) => {
    const existing = await trx('users').where({ email: profile.email }).first<{ id: string } | undefined>('id');
    // A domain claim is not verified (first come, decision 0083): an org's provider vouches only for people of that org
    // alone. Someone with a membership elsewhere is never signed in by it, so no org's provider can act as another's member.
    if (existing && await trx('org_memberships').where({ user_id: existing.id }).whereNot({ org_id: orgId }).first('org_id')) {
      return { refused: 'this email belongs to an account in another org, which single sign-on of this org cannot sign in; sign in with its password', user: undefined };
    }
    const current = existing
      ? (await trx('org_memberships').where({ org_id: orgId, user_id: existing.id }).forUpdate().first<{ role: OrgRole } | undefined>('role'))?.role
      : undefined;
    // Locked: two owners signing in at once, each demoted by a changed group, must not both see the other as the owner left.
    const otherOwners = await trx('org_memberships').where({ org_id: orgId, role: 'owner' }).whereNot({ user_id: existing?.id ?? randomUUID() }).forUpdate().select('user_id');
    const owners = [{ n: otherOwners.length }];
    const decision = decide(current, Number(owners[0]?.n ?? 0));
    if ('refused' in decision) {
      const user = existing ? await trx('users').where({ id: existing.id }).first() : undefined;
      return { refused: decision.refused, user: user ? toUser(user) : undefined };
    }
    const { user, created } = await ensureUser(trx, { id: randomUUID(), email: profile.email, firstName: profile.firstName, lastName: profile.lastName });
    let stored = user;
    if (created && profile.profilePictureUrl !== undefined) {
      await trx('users').where({ id: user.id }).update({ profile_picture_url: profile.profilePictureUrl });
      stored = { ...user, profilePictureUrl: profile.profilePictureUrl };
    }
    if (current !== decision.role) await setOrgRole(trx, orgId, user.id, decision.role);
    return { user: stored, userCreated: created, before: current, after: decision.role };
  });
}
