import type { Knex } from 'knex';

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

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
  if (!uuidPattern.test(clientId)) return undefined;
  const row = await db('m2m_clients').where({ id: clientId }).first<Row | undefined>();
  if (!row) return undefined;
  const secrets = await db('m2m_client_secrets').where({ client_id: clientId })
    .andWhere((q) => { q.whereNull('expires_at').orWhere('expires_at', '>', now); })
    .select<Array<{ hash: string }>>('hash');
  return { client: toRecord(row), secretHashes: secrets.map((s) => s.hash) };
}
