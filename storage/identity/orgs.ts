import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import { sqlQuery } from '../sql-tx.js';
import type { OrgRole, ProjectRole } from '../../schemas/identity/principal.js';
import {
  isUuid, toOrg, toProject, toUser,
  type MembershipRecord, type OrgRecord, type ProjectAccess, type ProjectRecord, type UserRecord,
} from './rows.js';

/**
 * Orgs, projects and memberships. Every read takes the org id it is scoped to; the only lookups that are not
 * are the ones that establish which orgs a user belongs to (by user id).
 */

const UNIQUE_VIOLATION = '23505';
export const isUniqueViolation = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === UNIQUE_VIOLATION;

export interface NewUser {
  readonly id: string;
  readonly email: string;
  readonly firstName?: string | undefined;
  readonly lastName?: string | undefined;
  readonly passwordHash?: string | undefined;
}

export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/**
 * Returns the user with this email, creating it when absent. An existing user keeps their names; a password is
 * set only when they have none, so provisioning never silently changes how someone logs in.
 */
export async function ensureUser(db: Knex, user: NewUser): Promise<{ user: UserRecord; created: boolean }> {
  const email = normaliseEmail(user.email);
  const inserted = await db('users')
    .insert({
      id: user.id,
      email,
      first_name: user.firstName ?? null,
      last_name: user.lastName ?? null,
      password_hash: user.passwordHash ?? null,
    })
    .onConflict('email').ignore()
    .returning('*');
  if (inserted[0]) return { user: toUser(inserted[0]), created: true };
  if (user.passwordHash !== undefined) {
    await db('users').where({ email }).whereNull('password_hash').update({ password_hash: user.passwordHash });
  }
  const existing = await db('users').where({ email }).first();
  if (!existing) throw new TroupeError('CONFLICT', 'user was removed while being provisioned');
  return { user: toUser(existing), created: false };
}

/**
 * Takes back an org whose provisioning failed before any credential was handed out: the org goes, and with it (by
 * cascade) its memberships, projects and any credential its actor had already stored; the owner goes too when this
 * provisioning created them and they belong to no other org. The same request can then simply be sent again.
 */
export async function deleteProvisionedOrg(db: Knex, orgId: string, createdUserId: string | undefined): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('orgs').where({ id: orgId }).delete();
    if (createdUserId === undefined) return;
    const elsewhere = await trx('org_memberships').where({ user_id: createdUserId }).first();
    if (!elsewhere) await trx('users').where({ id: createdUserId }).delete();
  });
}

export async function insertOrg(db: Knex, org: { id: string; name: string; slug: string; plan: string }): Promise<OrgRecord> {
  try {
    const [row] = await db('orgs').insert(org).returning('*');
    return toOrg(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw new TroupeError('ALREADY_EXISTS', `an org with slug "${org.slug}" already exists`, { field: 'slug' });
    throw err;
  }
}

export async function slugTaken(db: Knex, slug: string): Promise<boolean> {
  return (await db('orgs').where({ slug }).first('id')) !== undefined;
}

export async function findOrg(db: Knex, orgId: string): Promise<OrgRecord | undefined> {
  if (!isUuid(orgId)) return undefined;
  const row = await db('orgs').where({ id: orgId }).first();
  return row ? toOrg(row) : undefined;
}

export async function insertProject(db: Knex, project: { id: string; orgId: string; name: string; slug: string }): Promise<ProjectRecord> {
  const [row] = await db('projects')
    .insert({ id: project.id, org_id: project.orgId, name: project.name, slug: project.slug })
    .returning('*');
  return toProject(row);
}

export async function listProjects(db: Knex, orgId: string): Promise<ProjectRecord[]> {
  const rows = await db('projects').where({ org_id: orgId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
  return rows.map(toProject);
}

/** The subset of `projectIds` that belong to `orgId`: anything missing is absent or another org's. */
export async function projectsInOrg(db: Knex, orgId: string, projectIds: readonly string[]): Promise<Set<string>> {
  const wellFormed = projectIds.filter(isUuid);
  if (wellFormed.length === 0) return new Set();
  // Plain SQL, as the other reads on hot paths (decision 0055); a dispatch checks its project in dispatchReads.
  const rows = await sqlQuery<{ id: string }>(db, 'select id from projects where org_id = $1 and id = any($2::uuid[])', [orgId, wellFormed]);
  return new Set(rows.map((r) => r.id));
}

/** Projects of the org with the user's explicit role on each (null where none was granted). */
export async function listProjectAccess(db: Knex, orgId: string, userId: string | null): Promise<ProjectAccess[]> {
  const rows = await db('projects as p')
    .leftJoin('project_memberships as pm', function joinMembership() {
      this.on('pm.project_id', '=', 'p.id').andOn('pm.user_id', '=', db.raw('?', [userId]));
    })
    .where('p.org_id', orgId)
    .orderBy([{ column: 'p.created_at' }, { column: 'p.id' }])
    .select('p.*', 'pm.role as member_role');
  return rows.map((r: Record<string, unknown>) => ({ ...toProject(r), role: (r.member_role as ProjectRole | null) ?? null }));
}

export async function setOrgRole(db: Knex, orgId: string, userId: string, role: OrgRole): Promise<void> {
  await db('org_memberships').insert({ org_id: orgId, user_id: userId, role }).onConflict(['org_id', 'user_id']).merge({ role });
}

export async function setProjectRole(db: Knex, orgId: string, projectId: string, userId: string, role: ProjectRole): Promise<void> {
  await db('project_memberships')
    .insert({ org_id: orgId, project_id: projectId, user_id: userId, role })
    .onConflict(['project_id', 'user_id']).merge({ role });
}

export async function orgRoleOf(db: Knex, orgId: string, userId: string): Promise<OrgRole | undefined> {
  if (!isUuid(orgId) || !isUuid(userId)) return undefined;
  const row = await db('org_memberships').where({ org_id: orgId, user_id: userId }).first('role');
  return row ? (row.role as OrgRole) : undefined;
}

export async function projectRoleOf(db: Knex, orgId: string, projectId: string, userId: string): Promise<ProjectRole | undefined> {
  if (!isUuid(projectId) || !isUuid(userId)) return undefined;
  const row = await db('project_memberships').where({ org_id: orgId, project_id: projectId, user_id: userId }).first('role');
  return row ? (row.role as ProjectRole) : undefined;
}

/** Every org the user belongs to, oldest membership first (the default org at login). */
export async function listMemberships(db: Knex, userId: string): Promise<MembershipRecord[]> {
  const rows = await db('org_memberships as m')
    .join('orgs as o', 'o.id', 'm.org_id')
    .where('m.user_id', userId)
    .orderBy([{ column: 'm.created_at' }, { column: 'o.id' }])
    .select('o.*', 'm.role as member_role');
  return rows.map((r: Record<string, unknown>) => ({ org: toOrg(r), role: r.member_role as OrgRole }));
}

/**
 * A new org with its owner (found or created by email) and its default project, in one transaction: the platform
 * admin's provisioning write, made here and nowhere else.
 */
export async function provisionOrg(
  db: Knex, org: { id: string; name: string; slug: string; plan: string }, owner: NewUser, project: { id: string; name: string; slug: string },
): Promise<{ org: OrgRecord; user: UserRecord; userCreated: boolean; project: ProjectRecord }> {
  return db.transaction(async (trx) => {
    const created = await insertOrg(trx, org);
    const { user, created: userCreated } = await ensureUser(trx, owner);
    await setOrgRole(trx, created.id, user.id, 'owner');
    return { org: created, user, userCreated, project: await insertProject(trx, { ...project, orgId: created.id }) };
  });
}

/** A member of an org (found or created by email) with their org role and project roles, in one transaction. */
export async function provisionMember(
  db: Knex, orgId: string, user: NewUser, role: OrgRole, projects: ReadonlyArray<{ id: string; role: ProjectRole }>,
): Promise<UserRecord> {
  return db.transaction(async (trx) => {
    const ensured = await ensureUser(trx, user);
    await setOrgRole(trx, orgId, ensured.user.id, role);
    for (const p of projects) await setProjectRole(trx, orgId, p.id, ensured.user.id, p.role);
    return ensured.user;
  });
}
