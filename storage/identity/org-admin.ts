import type { Knex } from 'knex';
import type { OrgRole } from '../../schemas/identity/principal.js';
import { isUuid, iso, isoOrNull, toTeam, toUser, type TeamRecord, type UserRecord } from './rows.js';

/**
 * What an org's administrators read and change about its people and credentials (issue 37 §2, the console's
 * administration pages): members with their roles, teams, and the API keys and registration tokens the org actor
 * issued (read models only; issuing and revoking stay with the actor). Every query names the org, so another org's
 * rows read as absent.
 */

export interface MemberRecord {
  readonly user: UserRecord;
  readonly role: OrgRole;
  readonly joinedAt: string;
  /** False for someone who can only sign in through single sign-on (or not yet at all). */
  readonly hasPassword: boolean;
}

/** How many members one listing returns at most: an org of people, not of machines. */
export const MEMBERS_LISTED = 1000;

export async function listMembers(db: Knex, orgId: string): Promise<MemberRecord[]> {
  const rows = await db('org_memberships as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.org_id', orgId)
    .orderBy([{ column: 'm.created_at' }, { column: 'u.id' }])
    .limit(MEMBERS_LISTED)
    .select('u.*', 'm.role as member_role', 'm.created_at as joined_at');
  return rows.map((r: Record<string, unknown>) => ({
    user: toUser(r), role: r.member_role as OrgRole, joinedAt: iso(r.joined_at), hasPassword: r.password_hash !== null && r.password_hash !== undefined,
  }));
}

export async function findMember(db: Knex, orgId: string, userId: string): Promise<MemberRecord | undefined> {
  if (!isUuid(userId)) return undefined;
  const row = await db('org_memberships as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where({ 'm.org_id': orgId, 'u.id': userId })
    .first('u.*', 'm.role as member_role', 'm.created_at as joined_at');
  return row ? { user: toUser(row), role: row.member_role as OrgRole, joinedAt: iso(row.joined_at), hasPassword: row.password_hash !== null } : undefined;
}

export async function userIdByEmail(db: Knex, email: string): Promise<string | undefined> {
  const row = await db('users').where({ email }).first('id');
  return row ? String(row.id) : undefined;
}

/** Makes the user a member at `role`; false when they already are one (their role is left as it is). */
export async function addMembership(db: Knex, orgId: string, userId: string, role: OrgRole): Promise<boolean> {
  const rows = await db('org_memberships').insert({ org_id: orgId, user_id: userId, role }).onConflict(['org_id', 'user_id']).ignore().returning('user_id');
  return rows.length > 0;
}

/** Gives a user this request just created their first password (never one that has a password already). */
export async function setInitialPassword(db: Knex, userId: string, passwordHash: string): Promise<void> {
  await db('users').where({ id: userId }).whereNull('password_hash').update({ password_hash: passwordHash });
}

/** What a role change or removal came to: done, refused to keep an owner, or the member was not at `from` any more. */
export type MembershipChange = 'done' | 'last-owner' | 'moved';

/**
 * Changes a member's role from `from` (what the caller was authorized against) unless that would leave the org
 * without an owner. The owners are counted under a lock on their membership rows, so two admins demoting the last
 * two owners at once cannot both succeed; a role changed meanwhile by someone else is `moved`, never overwritten.
 */
export async function changeMemberRole(db: Knex, orgId: string, userId: string, from: OrgRole, to: OrgRole): Promise<MembershipChange> {
  return db.transaction(async (trx) => {
    if (to !== 'owner' && !(await anotherOwnerRemains(trx, orgId, userId))) return 'last-owner';
    const rows = await trx('org_memberships').where({ org_id: orgId, user_id: userId, role: from }).update({ role: to }).returning('user_id');
    return rows.length > 0 ? 'done' : 'moved';
  });
}

/** Takes the member (at `from`) out of the org, its projects and its teams, unless they are its last owner. */
export async function removeMember(db: Knex, orgId: string, userId: string, from: OrgRole): Promise<MembershipChange> {
  return db.transaction(async (trx) => {
    if (!(await anotherOwnerRemains(trx, orgId, userId))) return 'last-owner';
    const rows = await trx('org_memberships').where({ org_id: orgId, user_id: userId, role: from }).delete().returning('user_id');
    if (rows.length === 0) return 'moved';
    await trx('team_members').where({ org_id: orgId, user_id: userId }).delete();
    await trx('project_memberships').where({ org_id: orgId, user_id: userId }).delete();
    return 'done';
  });
}

/** True when `userId` is not an owner, or some other owner of the org exists (its rows locked until commit). */
async function anotherOwnerRemains(trx: Knex.Transaction, orgId: string, userId: string): Promise<boolean> {
  const owners = await trx('org_memberships').where({ org_id: orgId, role: 'owner' }).forUpdate().select('user_id');
  const ids = owners.map((o: { user_id: string }) => String(o.user_id));
  return !ids.includes(userId) || ids.length > 1;
}

export async function listTeams(db: Knex, orgId: string): Promise<Array<TeamRecord & { memberCount: number }>> {
  const rows = await db('teams as t')
    .leftJoin('team_members as tm', 'tm.team_id', 't.id')
    .where('t.org_id', orgId)
    .groupBy('t.id')
    .orderBy([{ column: 't.created_at' }, { column: 't.id' }])
    .limit(MEMBERS_LISTED)
    .select('t.*', db.raw('count(tm.user_id) as member_count'));
  return rows.map((r: Record<string, unknown>) => ({ ...toTeam(r), memberCount: Number(r.member_count) }));
}

/** False when the user was not on the team. */
export async function removeTeamMember(db: Knex, orgId: string, teamId: string, userId: string): Promise<boolean> {
  if (!isUuid(userId)) return false;
  // `returning` rather than the affected-row count, which PGlite's dialect does not report.
  return (await db('team_members').where({ org_id: orgId, team_id: teamId, user_id: userId }).delete().returning('user_id')).length > 0;
}

/** An issued API key as its org sees it later: never its hash, only the prefix that names it in logs. */
export interface ApiKeyListing {
  readonly id: string; readonly name: string; readonly prefix: string; readonly scopes: string[];
  readonly requesterId: string | null; readonly createdBy: string | null; readonly createdAt: string; readonly revokedAt: string | null;
}

export interface RegistrationTokenListing {
  readonly id: string; readonly name: string; readonly prefix: string; readonly projects: string[];
  readonly createdAt: string; readonly revokedAt: string | null;
}

/** Credentials one listing returns at most, newest first. */
export const CREDENTIALS_LISTED = 500;

const strings = (value: unknown): string[] => {
  const parsed = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  return Array.isArray(parsed) ? parsed.map(String) : [];
};

export async function listApiKeys(db: Knex, orgId: string): Promise<ApiKeyListing[]> {
  const rows = await db('api_keys').where({ org_id: orgId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }]).limit(CREDENTIALS_LISTED);
  return rows.map((r: Record<string, unknown>) => ({
    id: String(r.id), name: String(r.name), prefix: String(r.prefix), scopes: strings(r.scopes),
    requesterId: r.requester_id === null ? null : String(r.requester_id), createdBy: r.created_by === null ? null : String(r.created_by),
    createdAt: iso(r.created_at), revokedAt: isoOrNull(r.revoked_at),
  }));
}

export async function listRegistrationTokens(db: Knex, orgId: string): Promise<RegistrationTokenListing[]> {
  const rows = await db('registration_tokens').where({ org_id: orgId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }]).limit(CREDENTIALS_LISTED);
  return rows.map((r: Record<string, unknown>) => ({
    id: String(r.id), name: String(r.name), prefix: String(r.prefix), projects: strings(r.projects),
    createdAt: iso(r.created_at), revokedAt: isoOrNull(r.revoked_at),
  }));
}
