import type { Knex } from 'knex';
import { toApiKey, toRegistrationToken, type ApiKeyRecord, type RegistrationTokenRecord } from './rows.js';
import type { ApiKeyMeta, RegistrationTokenMeta } from '../../schemas/identity/org-actor.js';

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

/**
 * The projects a worker may act in now (daemon_workers.project_ids, kept by its daemon-host actor: a removal counts
 * from the moment it is asked), or undefined when the org has no such worker.
 */
export async function workerProjects(db: Knex, orgId: string, workerId: string): Promise<string[] | undefined> {
  const row = await db('daemon_workers').where({ id: workerId, org_id: orgId }).first('project_ids');
  if (row === undefined) return undefined;
  const ids: unknown = typeof row.project_ids === 'string' ? JSON.parse(row.project_ids) : row.project_ids;
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
}

export async function registrationTokensByPrefix(db: Knex, prefix: string): Promise<RegistrationTokenRecord[]> {
  const rows = await db('registration_tokens').where({ prefix }).limit(16);
  return rows.map(toRegistrationToken);
}

/** Idempotent: replaying the projection of the same issue writes nothing new. */
export async function writeApiKey(trx: Knex, orgId: string, key: ApiKeyMeta): Promise<void> {
  await trx('api_keys')
    .insert({
      id: key.id,
      org_id: orgId,
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

export async function writeRegistrationToken(trx: Knex, orgId: string, token: RegistrationTokenMeta): Promise<void> {
  await trx('registration_tokens')
    .insert({
      id: token.id,
      org_id: orgId,
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
