import type { Knex } from 'knex';
import { toApiKey, toRegistrationToken, type ApiKeyRecord, type RegistrationTokenRecord } from './rows.js';

/**
 * Read models of the org actor's API keys and registration tokens. The actor writes them through `project`
 * (inside its snapshot transaction), so they never disagree with what it answered; nothing else writes here.
 *
 * `*ByPrefix` are the one deliberate exception to "scoped by org": they run before anyone knows the org, with the
 * lookup prefix of a presented secret. Rows come back from any org; the caller compares hashes and takes the org
 * from the matching row, never from the request.
 */

export async function apiKeysByPrefix(db: Knex, prefix: string): Promise<ApiKeyRecord[]> {
  const rows = await db('api_keys').where({ prefix }).limit(16);
  return rows.map(toApiKey);
}

export async function findApiKey(db: Knex, orgId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
  const row = await db('api_keys').where({ org_id: orgId, id: keyId }).first();
  return row ? toApiKey(row) : undefined;
}

/**
 * True when the registration exists in the org and is not revoked: a runtime JWT is only as good as the
 * registration its worker used (`reg` claim). One primary-key lookup; the authenticator memoises the answer with
 * the principal and drops it on the `registration:<id>` revocation tag.
 */
export async function registrationIsLive(db: Knex, orgId: string, registrationId: string): Promise<boolean> {
  const row = await db('registration_tokens').where({ id: registrationId, org_id: orgId }).first('revoked_at');
  return row !== undefined && row.revoked_at === null;
}

export async function registrationTokensByPrefix(db: Knex, prefix: string): Promise<RegistrationTokenRecord[]> {
  const rows = await db('registration_tokens').where({ prefix }).limit(16);
  return rows.map(toRegistrationToken);
}

export interface ApiKeyRow {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
  readonly prefix: string;
  readonly hash: string;
  readonly scopes: readonly string[];
  readonly requesterId: string | null;
  readonly createdBy: string | null;
  readonly createdAt: number;
}

/** Idempotent: replaying the projection of the same issue writes nothing new. */
export async function writeApiKey(trx: Knex, key: ApiKeyRow): Promise<void> {
  await trx('api_keys')
    .insert({
      id: key.id,
      org_id: key.orgId,
      name: key.name,
      prefix: key.prefix,
      hash: key.hash,
      scopes: JSON.stringify(key.scopes),
      requester_id: key.requesterId,
      created_by: key.createdBy,
      created_at: new Date(key.createdAt),
    })
    .onConflict('id').ignore();
}

export async function markApiKeyRevoked(trx: Knex, orgId: string, keyId: string, revokedAt: number): Promise<void> {
  await trx('api_keys').where({ org_id: orgId, id: keyId }).whereNull('revoked_at').update({ revoked_at: new Date(revokedAt) });
}

export interface RegistrationTokenRow {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
  readonly prefix: string;
  readonly hash: string;
  readonly projects: readonly string[];
  readonly createdAt: number;
}

export async function writeRegistrationToken(trx: Knex, token: RegistrationTokenRow): Promise<void> {
  await trx('registration_tokens')
    .insert({
      id: token.id,
      org_id: token.orgId,
      name: token.name,
      prefix: token.prefix,
      hash: token.hash,
      projects: JSON.stringify(token.projects),
      created_at: new Date(token.createdAt),
    })
    .onConflict('id').ignore();
}

export async function markRegistrationTokenRevoked(trx: Knex, orgId: string, tokenId: string, revokedAt: number): Promise<void> {
  await trx('registration_tokens').where({ org_id: orgId, id: tokenId }).whereNull('revoked_at').update({ revoked_at: new Date(revokedAt) });
}
