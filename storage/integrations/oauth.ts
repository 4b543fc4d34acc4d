import type { Knex } from 'knex';
import { isoOrNull } from '../identity/rows.js';

/**
 * Integration OAuth storage (migrations 0013, 0018). States are looked up only by the hash of the state value and
 * are consumed by deleting them, so a state works once however many callbacks race for it. Connections keep the
 * provider's token response sealed; only the actors that call the provider (actors/services/integrations/oauth) open it.
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

export type OAuthConnectionStatus = 'connected' | 'reauthorization_required';

export interface OAuthConnection {
  readonly orgId: string;
  readonly provider: string;
  readonly sealedTokens: string;
  readonly scope: string | null;
  readonly expiresAt: string | null;
  readonly connectedBy: string;
  /** When a user last connected (a refresh does not move it). */
  readonly updatedAt: string;
  readonly status: OAuthConnectionStatus;
  readonly statusChangedAt: string | null;
  readonly refreshedAt: string | null;
  /** Which write of the tokens this is; a refresh stores its tokens only over the version it read. */
  readonly tokenVersion: number;
}

interface ConnectionRow {
  org_id: string; provider: string; sealed_tokens: string; scope: string | null; expires_at: Date | null;
  connected_by: string; updated_at: Date; status: OAuthConnectionStatus; status_changed_at: Date | null;
  refreshed_at: Date | null; token_version: number | string;
}

const CONNECTIONS = 'integration_oauth_connections';

/** A user (re)connected: new tokens, whatever state the connection was in, and any re-authorization need is over. */
export async function upsertOAuthConnection(
  db: Knex,
  input: { orgId: string; provider: string; sealedTokens: string; scope: string | null; expiresAt: Date | null; connectedBy: string; at: Date },
): Promise<void> {
  await db(CONNECTIONS)
    .insert({
      org_id: input.orgId, provider: input.provider, sealed_tokens: input.sealedTokens, scope: input.scope,
      expires_at: input.expiresAt, connected_by: input.connectedBy, created_at: input.at, updated_at: input.at,
    })
    .onConflict(['org_id', 'provider'])
    .merge({
      sealed_tokens: input.sealedTokens, scope: input.scope, expires_at: input.expiresAt, connected_by: input.connectedBy, updated_at: input.at,
      status: 'connected', status_changed_at: null, refreshed_at: null,
      // A refresh that started before this reconnection must not write its (older grant's) tokens over these.
      token_version: db.raw('?? + 1', [`${CONNECTIONS}.token_version`]),
    });
}

/** The org's connection to a provider, if any: what the resource palette and the error-tracker lookup ask. */
export async function findOAuthConnection(db: Knex, orgId: string, provider: string): Promise<OAuthConnection | undefined> {
  const row = await db(CONNECTIONS).where({ org_id: orgId, provider }).first<ConnectionRow | undefined>();
  return row && {
    orgId: row.org_id, provider: row.provider, sealedTokens: row.sealed_tokens, scope: row.scope,
    expiresAt: isoOrNull(row.expires_at), connectedBy: row.connected_by, updatedAt: new Date(row.updated_at).toISOString(),
    status: row.status, statusChangedAt: isoOrNull(row.status_changed_at), refreshedAt: isoOrNull(row.refreshed_at),
    tokenVersion: Number(row.token_version),
  };
}

/**
 * Stores refreshed tokens if the stored ones are still those of `readVersion` (compare-and-set): false when another
 * node refreshed, or a user reconnected, in between — their tokens stay. A connection marked for re-authorization
 * at that same version is connected again: the mark came from a refresh that lost a race to this one.
 */
export async function storeRefreshedTokens(
  db: Knex,
  input: { orgId: string; provider: string; readVersion: number; sealedTokens: string; scope: string | null; expiresAt: Date | null; at: Date },
): Promise<boolean> {
  const updated = await db(CONNECTIONS)
    .where({ org_id: input.orgId, provider: input.provider, token_version: input.readVersion })
    .update({
      sealed_tokens: input.sealedTokens, scope: input.scope, expires_at: input.expiresAt, refreshed_at: input.at,
      status: 'connected', status_changed_at: null, token_version: input.readVersion + 1,
    });
  return updated === 1;
}

/**
 * Marks the tokens of `readVersion` as unusable until a user connects again; false when they were already replaced
 * (or already marked). The version is not bumped, so a concurrent refresh of the same version that did succeed
 * still stores its tokens.
 */
export async function markReauthorizationRequired(
  db: Knex, input: { orgId: string; provider: string; readVersion: number; at: Date },
): Promise<boolean> {
  const updated = await db(CONNECTIONS)
    .where({ org_id: input.orgId, provider: input.provider, token_version: input.readVersion, status: 'connected' })
    .update({ status: 'reauthorization_required', status_changed_at: input.at });
  return updated === 1;
}
