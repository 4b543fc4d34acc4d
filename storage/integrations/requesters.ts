import type { Knex } from 'knex';
import { isUniqueViolation } from '../identity/orgs.js';
import { appendAudit, type AuditInput } from '../audit-log.js';

/** A signed agent-dispatch registration (spec 5.5). `publicKey` is the standard base64 of a raw Ed25519 key. */
export type RequesterMode = 'light' | 'strict';

export interface RequesterRecord {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
  readonly mode: RequesterMode;
  readonly publicKey: string | null;
  readonly createdBy: string;
  readonly createdAt: string;
}

interface Row { id: string; org_id: string; name: string; mode: RequesterMode; public_key: string | null; created_by: string; created_at: Date }

const toRecord = (r: Row): RequesterRecord => ({
  id: r.id, orgId: r.org_id, name: r.name, mode: r.mode, publicKey: r.public_key, createdBy: r.created_by,
  createdAt: new Date(r.created_at).toISOString(),
});

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Inserts, or returns undefined when the org already has a requester of that name. */
export async function insertRequester(db: Knex, r: Omit<RequesterRecord, 'createdAt'> & { at: Date }): Promise<RequesterRecord | undefined> {
  try {
    const rows = await db('requesters').insert({
      id: r.id, org_id: r.orgId, name: r.name, mode: r.mode, public_key: r.publicKey, created_by: r.createdBy, created_at: r.at,
    }).returning('*') as Row[];
    return toRecord(rows[0]!);
  } catch (err) {
    if (isUniqueViolation(err)) return undefined;
    throw err;
  }
}

/** The requester in this org; another org's id (or a malformed one) is simply absent. */
export async function findRequester(db: Knex, orgId: string, id: string): Promise<RequesterRecord | undefined> {
  if (!uuidPattern.test(id)) return undefined;
  const row = await db('requesters').where({ org_id: orgId, id }).first<Row | undefined>();
  return row ? toRecord(row) : undefined;
}

export async function listRequesters(db: Knex, orgId: string): Promise<RequesterRecord[]> {
  return (await db('requesters').where({ org_id: orgId }).orderBy('created_at').select<Row[]>()).map(toRecord);
}

/** Registers a requester and appends its audit entry, in one transaction; undefined when the name is taken. */
export async function registerRequester(
  db: Knex, r: Omit<RequesterRecord, 'createdAt'> & { at: Date }, audit: (row: RequesterRecord) => AuditInput,
): Promise<RequesterRecord | undefined> {
  return db.transaction(async (trx) => {
    const row = await insertRequester(trx, r);
    if (row) await appendAudit(trx, audit(row));
    return row;
  });
}
