import type { Knex } from 'knex';

/**
 * Sign-ins under way at an org's provider (migration 0053). A state is found only by the hash of its value and is
 * consumed by deleting it, so a state works once however many callbacks race for it; a state presented without
 * the cookie of the browser that started it reads as unknown and stays for that browser.
 */
export interface PendingSignIn {
  readonly orgId: string;
  readonly sealedChecks: string;
  readonly redirectUri: string;
  readonly nextPath: string;
  readonly expiresAt: Date;
}

interface Row { org_id: string; sealed_checks: string; redirect_uri: string; next_path: string; expires_at: Date }

export async function insertSignInState(db: Knex, stateHash: string, browserHash: string, pending: PendingSignIn, at: Date): Promise<void> {
  // Abandoned sign-ins leave rows behind; each new one clears the expired, so the table holds only those under way.
  await db('oidc_login_states').where('expires_at', '<', at).delete();
  await db('oidc_login_states').insert({
    state_hash: stateHash, browser_hash: browserHash, org_id: pending.orgId, sealed_checks: pending.sealedChecks,
    redirect_uri: pending.redirectUri, next_path: pending.nextPath, created_at: at, expires_at: pending.expiresAt,
  });
}

export async function consumeSignInState(db: Knex, stateHash: string, browserHash: string): Promise<PendingSignIn | undefined> {
  const rows = await db('oidc_login_states').where({ state_hash: stateHash, browser_hash: browserHash }).delete().returning('*') as Row[];
  const row = rows[0];
  return row && {
    orgId: row.org_id, sealedChecks: row.sealed_checks, redirectUri: row.redirect_uri, nextPath: row.next_path, expiresAt: new Date(row.expires_at),
  };
}
