import type { Knex } from 'knex';

/**
 * Integration OAuth storage (migration 0013). States are looked up only by the hash of the state value and are
 * consumed by deleting them, so a state works once however many callbacks race for it. Connections keep the
 * provider's token response sealed; only `openConnectionTokens` callers (lookups against the provider) open it.
 */
export interface PendingAuthorization {
  readonly orgId: string;
  readonly userId: string;
  readonly provider: string;
  readonly sealedVerifier: string;
  readonly redirectUri: string;
  readonly expiresAt: Date;
}

interface StateRow {
  state_hash: string; org_id: string; user_id: string; provider: string; sealed_verifier: string; redirect_uri: string;
  created_at: Date; expires_at: Date;
}

export async function insertAuthorizationState(
  db: Knex, stateHash: string, pending: PendingAuthorization, at: Date,
): Promise<void> {
  // Abandoned flows leave rows behind; each new flow clears the expired ones, so the table stays as small as the
  // number of authorizations actually under way.
  await db('integration_oauth_states').where('expires_at', '<', at).delete();
  await db('integration_oauth_states').insert({
    state_hash: stateHash, org_id: pending.orgId, user_id: pending.userId, provider: pending.provider,
    sealed_verifier: pending.sealedVerifier, redirect_uri: pending.redirectUri, created_at: at, expires_at: pending.expiresAt,
  });
}

/**
 * Takes the state out of the table if, and only if, it was issued to this org, user and provider. A state of
 * another org or user is left alone (its owner can still finish) and reads as unknown.
 */
export async function consumeAuthorizationState(
  db: Knex, stateHash: string, bound: { orgId: string; userId: string; provider: string },
): Promise<PendingAuthorization | undefined> {
  const rows = await db('integration_oauth_states')
    .where({ state_hash: stateHash, org_id: bound.orgId, user_id: bound.userId, provider: bound.provider })
    .delete()
    .returning('*') as StateRow[];
  const row = rows[0];
  return row && {
    orgId: row.org_id, userId: row.user_id, provider: row.provider, sealedVerifier: row.sealed_verifier,
    redirectUri: row.redirect_uri, expiresAt: new Date(row.expires_at),
  };
}

export interface OAuthConnection {
  readonly orgId: string;
  readonly provider: string;
  readonly sealedTokens: string;
  readonly scope: string | null;
  readonly expiresAt: string | null;
  readonly connectedBy: string;
  readonly updatedAt: string;
}

interface ConnectionRow {
  org_id: string; provider: string; sealed_tokens: string; scope: string | null; expires_at: Date | null;
  connected_by: string; updated_at: Date;
}

export async function upsertOAuthConnection(
  db: Knex,
  input: { orgId: string; provider: string; sealedTokens: string; scope: string | null; expiresAt: Date | null; connectedBy: string; at: Date },
): Promise<void> {
  await db('integration_oauth_connections')
    .insert({
      org_id: input.orgId, provider: input.provider, sealed_tokens: input.sealedTokens, scope: input.scope,
      expires_at: input.expiresAt, connected_by: input.connectedBy, created_at: input.at, updated_at: input.at,
    })
    .onConflict(['org_id', 'provider'])
    .merge({ sealed_tokens: input.sealedTokens, scope: input.scope, expires_at: input.expiresAt, connected_by: input.connectedBy, updated_at: input.at });
}

/** The org's connection to a provider, if any: what the resource palette and the error-tracker lookup ask. */
export async function findOAuthConnection(db: Knex, orgId: string, provider: string): Promise<OAuthConnection | undefined> {
  const row = await db('integration_oauth_connections').where({ org_id: orgId, provider }).first<ConnectionRow | undefined>();
  return row && {
    orgId: row.org_id, provider: row.provider, sealedTokens: row.sealed_tokens, scope: row.scope,
    expiresAt: row.expires_at ? new Date(row.expires_at).toISOString() : null, connectedBy: row.connected_by,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}
