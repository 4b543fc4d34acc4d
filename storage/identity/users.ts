import type { Knex } from 'knex';
import { isUuid, toUser, type UserRecord } from './rows.js';
import { normaliseEmail } from './orgs.js';

/**
 * User lookups. A user on its own is not org data; callers that show a user to another user go through
 * `findOrgMember`, which only answers for members of the caller's org.
 */

/** For login only: the user and their password hash (the one place a hash leaves storage). */
export async function findLoginByEmail(db: Knex, email: string): Promise<{ user: UserRecord; passwordHash: string | null } | undefined> {
  const row = await db('users').where({ email: normaliseEmail(email) }).first();
  return row ? { user: toUser(row), passwordHash: (row.password_hash as string | null) ?? null } : undefined;
}

export async function findOrgMember(db: Knex, orgId: string, userId: string): Promise<UserRecord | undefined> {
  if (!isUuid(userId)) return undefined;
  const row = await db('users as u')
    .join('org_memberships as m', 'm.user_id', 'u.id')
    .where({ 'm.org_id': orgId, 'u.id': userId })
    .first('u.*');
  return row ? toUser(row) : undefined;
}
