import type { Knex } from 'knex';

/**
 * User tokens ended by logout, kept until they would have expired anyway. The authenticator asks `userTokenRevoked`
 * whenever it resolves a user token without a memo entry, so a revocation holds on every node and after a restart,
 * not only where the `userToken:<id>` revocation event cleared a memo entry.
 */

export interface RevokedUserToken {
  readonly id: string;
  readonly orgId: string;
  readonly userId: string;
  /** Milliseconds since the epoch: the token's own expiry. */
  readonly expiresAt: number;
}

/** Records the revocation (again is a no-op) and prunes rows whose token has expired since. */
export async function revokeUserToken(db: Knex, token: RevokedUserToken, now: number): Promise<void> {
  await db('revoked_user_tokens')
    .insert({ jti: token.id, org_id: token.orgId, user_id: token.userId, revoked_at: new Date(now), expires_at: new Date(token.expiresAt) })
    .onConflict('jti').ignore();
  await db('revoked_user_tokens').where('expires_at', '<=', new Date(now)).delete();
}

export async function userTokenRevoked(db: Knex, id: string): Promise<boolean> {
  return (await db('revoked_user_tokens').where({ jti: id }).first('jti')) !== undefined;
}
