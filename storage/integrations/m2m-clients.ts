import type { Knex } from 'knex';
import { isUuid } from '../identity/rows.js';
import { appendAudit, type AuditInput } from '../audit-log.js';

/**
 * OAuth client_credentials clients. A client has one or more secret hashes: rotation adds one and gives the old
 * an expiry, so callers holding either keep working until it passes.
 */
export interface M2mClientRecord {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly requesterId: string | null;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

interface Row { id: string; org_id: string; name: string; scopes: string[] | string; requester_id: string | null; created_at: Date; revoked_at: Date | null }

const toRecord = (r: Row): M2mClientRecord => ({
  id: r.id, orgId: r.org_id, name: r.name,
  scopes: typeof r.scopes === 'string' ? JSON.parse(r.scopes) as string[] : r.scopes,
  requesterId: r.requester_id, createdAt: new Date(r.created_at).toISOString(),
  revokedAt: r.revoked_at ? new Date(r.revoked_at).toISOString() : null,
});

export async function insertM2mClient(
  db: Knex, client: { id: string; orgId: string; name: string; scopes: readonly string[]; requesterId: string | null; secretId: string; secretHash: string; at: Date },
): Promise<M2mClientRecord> {
  return db.transaction(async (trx) => {
    const rows = await trx('m2m_clients').insert({
      id: client.id, org_id: client.orgId, name: client.name, scopes: JSON.stringify(client.scopes), requester_id: client.requesterId,
      created_at: client.at,
    }).returning('*') as Row[];
    await trx('m2m_client_secrets').insert({ id: client.secretId, client_id: client.id, hash: client.secretHash, created_at: client.at });
    return toRecord(rows[0]!);
  });
}

/**
 * The client a token request names, with the hashes of its secrets still valid at `now`. Unscoped by org on
 * purpose: this is how the org of a machine credential is established (like an API key's prefix lookup).
 */
export async function clientForAuthentication(
  db: Knex, clientId: string, now: Date,
): Promise<{ client: M2mClientRecord; secretHashes: string[] } | undefined> {
  if (!isUuid(clientId)) return undefined;
  const row = await db('m2m_clients').where({ id: clientId }).first<Row | undefined>();
  if (!row) return undefined;
  const secrets = await db('m2m_client_secrets').where({ client_id: clientId })
    .andWhere((q) => { q.whereNull('expires_at').orWhere('expires_at', '>', now); })
    .select<Array<{ hash: string }>>('hash');
  return { client: toRecord(row), secretHashes: secrets.map((s) => s.hash) };
}

/** A secret as operators see it: never its hash. */
export interface M2mSecretMeta {
  readonly id: string;
  readonly createdAt: string;
  /** When it stops working; null until a rotation gives it one. */
  readonly expiresAt: string | null;
}

export interface M2mClientDetail extends M2mClientRecord {
  readonly secrets: readonly M2mSecretMeta[];
}

interface SecretRow { id: string; client_id: string; created_at: Date; expires_at: Date | null }

const toSecretMeta = (s: SecretRow): M2mSecretMeta => ({
  id: s.id, createdAt: new Date(s.created_at).toISOString(), expiresAt: s.expires_at ? new Date(s.expires_at).toISOString() : null,
});

async function withSecrets(db: Knex, rows: readonly Row[]): Promise<M2mClientDetail[]> {
  if (rows.length === 0) return [];
  const secrets = await db('m2m_client_secrets').whereIn('client_id', rows.map((r) => r.id))
    .orderBy([{ column: 'created_at', order: 'asc' }, { column: 'id', order: 'asc' }])
    .select<SecretRow[]>('id', 'client_id', 'created_at', 'expires_at');
  return rows.map((r) => ({ ...toRecord(r), secrets: secrets.filter((s) => s.client_id === r.id).map(toSecretMeta) }));
}

export async function findM2mClient(db: Knex, clientId: string): Promise<M2mClientDetail | undefined> {
  if (!isUuid(clientId)) return undefined;
  const row = await db('m2m_clients').where({ id: clientId }).first<Row | undefined>();
  return row ? (await withSecrets(db, [row]))[0] : undefined;
}

/** Clients are provisioned one by one by the platform admin, so an org holds few; this bound only stops a runaway. */
export const M2M_CLIENTS_LISTED = 1000;

export async function listM2mClients(db: Knex, orgId: string): Promise<M2mClientDetail[]> {
  const rows = await db('m2m_clients').where({ org_id: orgId })
    .orderBy([{ column: 'created_at', order: 'asc' }, { column: 'id', order: 'asc' }]).limit(M2M_CLIENTS_LISTED).select<Row[]>('*');
  return withSecrets(db, rows);
}

export type RotationOutcome =
  | { readonly kind: 'absent' }
  | { readonly kind: 'revoked' }
  | { readonly kind: 'rotated'; readonly client: M2mClientRecord };

/**
 * Adds a secret and ends every older one at `previousExpireAt` at the latest (an earlier expiry stands). Call it in
 * a transaction: the client row is locked, so two concurrent rotations (or a rotation racing a revocation) run one
 * after the other. Secrets already expired are deleted: they can never work again, and a client rotated daily
 * would otherwise pile them up (the audit log keeps the history).
 */
export async function rotateM2mClientSecret(
  trx: Knex.Transaction, rotation: { clientId: string; secretId: string; secretHash: string; at: Date; previousExpireAt: Date },
): Promise<RotationOutcome> {
  if (!isUuid(rotation.clientId)) return { kind: 'absent' };
  const row = await trx('m2m_clients').where({ id: rotation.clientId }).forUpdate().first<Row | undefined>();
  if (!row) return { kind: 'absent' };
  if (row.revoked_at !== null) return { kind: 'revoked' };
  await trx('m2m_client_secrets').where({ client_id: rotation.clientId }).andWhere('expires_at', '<=', rotation.at).del();
  await trx('m2m_client_secrets').where({ client_id: rotation.clientId })
    .andWhere((q) => { q.whereNull('expires_at').orWhere('expires_at', '>', rotation.previousExpireAt); })
    .update({ expires_at: rotation.previousExpireAt });
  await trx('m2m_client_secrets').insert({ id: rotation.secretId, client_id: rotation.clientId, hash: rotation.secretHash, created_at: rotation.at });
  return { kind: 'rotated', client: toRecord(row) };
}

/** Marks a client revoked once; a second call reports the first revocation. Call it in a transaction (row lock). */
export async function markM2mClientRevoked(
  trx: Knex.Transaction, clientId: string, at: Date,
): Promise<{ client: M2mClientRecord; alreadyRevoked: boolean } | undefined> {
  if (!isUuid(clientId)) return undefined;
  const row = await trx('m2m_clients').where({ id: clientId }).forUpdate().first<Row | undefined>();
  if (!row) return undefined;
  if (row.revoked_at !== null) return { client: toRecord(row), alreadyRevoked: true };
  const updated = await trx('m2m_clients').where({ id: clientId }).update({ revoked_at: at }).returning('*') as Row[];
  return { client: toRecord(updated[0]!), alreadyRevoked: false };
}

/**
 * Whether a machine token naming this client may still act in this org: not when the client is revoked or belongs
 * to another org. A client id with no row passes: only this service signs machine tokens, always for a stored
 * client, and a client row goes only with its org (decision 0017).
 */
export async function machineClientIsLive(db: Knex, orgId: string, clientId: string): Promise<boolean> {
  if (!isUuid(clientId)) return false;
  const row = await db('m2m_clients').where({ id: clientId }).first<Pick<Row, 'org_id' | 'revoked_at'> | undefined>('org_id', 'revoked_at');
  return row === undefined || (row.org_id === orgId && row.revoked_at === null);
}

/** Rotates a client's secret (see `rotateM2mClientSecret`) and audits a rotation that happened, in one transaction. */
export async function rotateM2mClient(
  db: Knex, rotation: { clientId: string; secretId: string; secretHash: string; at: Date; previousExpireAt: Date },
  audit: (client: M2mClientRecord) => AuditInput,
): Promise<RotationOutcome> {
  return db.transaction(async (trx) => {
    const rotated = await rotateM2mClientSecret(trx, rotation);
    if (rotated.kind === 'rotated') await appendAudit(trx, audit(rotated.client));
    return rotated;
  });
}

/** Revokes a client once and audits the first revocation, in one transaction; undefined for an unknown client. */
export async function revokeM2mClient(
  db: Knex, clientId: string, at: Date,
): Promise<{ client: M2mClientRecord; alreadyRevoked: boolean } | undefined> {
  return db.transaction(async (trx) => {
    const revoked = await markM2mClientRevoked(trx, clientId, at);
    if (revoked && !revoked.alreadyRevoked) {
      await appendAudit(trx, { orgId: revoked.client.orgId, type: 'm2m_client.revoked', actor: 'admin', subject: clientId, at });
    }
    return revoked;
  });
}
