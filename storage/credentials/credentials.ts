import type { Knex } from 'knex';

/**
 * Stored credentials and rotate-stream presence (migration 0008, decision 0012). Every query is scoped by org.
 * Sealed values never leave this module's callers unopened except through `Secrets.open` with `<orgId>:<kind>`.
 */

export interface StoredCredential {
  readonly orgId: string;
  readonly kind: string;
  readonly provider: string;
  readonly sealedValue: string | null;
  readonly updatedAt: string;
  readonly rotatedAt: string | null;
}

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string).toISOString());

export async function upsertCredential(db: Knex, c: {
  orgId: string; kind: string; provider: string; sealedValue: string | null; updatedBy: string; at: number;
}): Promise<void> {
  const row = { provider: c.provider, sealed_value: c.sealedValue, updated_by: c.updatedBy, updated_at: new Date(c.at) };
  await db('org_credentials').insert({ org_id: c.orgId, kind: c.kind, ...row }).onConflict(['org_id', 'kind']).merge(row);
}

export async function findCredential(db: Knex, orgId: string, kind: string): Promise<StoredCredential | undefined> {
  const r = await db('org_credentials').where({ org_id: orgId, kind }).first();
  if (!r) return undefined;
  return {
    orgId: r.org_id, kind: r.kind, provider: r.provider, sealedValue: r.sealed_value,
    updatedAt: iso(r.updated_at)!, rotatedAt: iso(r.rotated_at),
  };
}

/** A rotation as it was pushed: its value sealed under `rotation:<org>:<kind>:<rotatedAt>`. */
export interface RecordedRotation {
  readonly kind: string;
  readonly rotatedAt: string;
  readonly sealedValue: string;
}

/** Where a resumed rotate stream left off: after the rotation (at, kind), or from the start. */
export type RotationCursor = { readonly at: number; readonly kind: string } | 'start';

/** Keeps the rotation's time and the sealed value it pushed on the credential's row; false when the row is gone. */
export async function recordRotation(db: Knex, orgId: string, kind: string, at: number, sealedValue: string): Promise<boolean> {
  const updated = await db('org_credentials').where({ org_id: orgId, kind }).update({ rotated_at: new Date(at), rotated_sealed_value: sealedValue });
  return updated > 0;
}

/**
 * The org's last rotation of each kind after `cursor`, oldest first, ties broken by kind: the order of their event
 * ids, so the last one sent is where the next resumption starts. Rows rotated before migration 0045 kept no pushed
 * value and are not replayed.
 */
export async function rotationsAfter(db: Knex, orgId: string, cursor: RotationCursor): Promise<RecordedRotation[]> {
  const query = db('org_credentials')
    .select('kind', 'rotated_at', 'rotated_sealed_value')
    .where({ org_id: orgId }).whereNotNull('rotated_sealed_value')
    .orderBy([{ column: 'rotated_at' }, { column: 'kind' }]);
  if (cursor !== 'start') {
    const at = new Date(cursor.at);
    query.where((q) => q.where('rotated_at', '>', at).orWhere((same) => same.where('rotated_at', '=', at).where('kind', '>', cursor.kind)));
  }
  const rows = await query;
  return rows.map((r) => ({ kind: r.kind, rotatedAt: iso(r.rotated_at)!, sealedValue: r.rotated_sealed_value }));
}

/** Records how many rotate-stream subscribers `nodeId` holds for `orgId` right now (an absolute count, idempotent). */
export async function writePresence(db: Knex, orgId: string, nodeId: string, subscribers: number, at: number): Promise<void> {
  await db('credential_stream_presence')
    .insert({ org_id: orgId, node_id: nodeId, subscribers, refreshed_at: new Date(at) })
    .onConflict(['org_id', 'node_id']).merge({ subscribers, refreshed_at: new Date(at) });
}

/** Keeps every row of this node alive; one statement however many orgs it serves. */
export async function refreshPresence(db: Knex, nodeId: string, at: number): Promise<void> {
  await db('credential_stream_presence').where({ node_id: nodeId }).where('subscribers', '>', 0).update({ refreshed_at: new Date(at) });
}

/** Live rotate-stream subscribers of the org across all nodes that reported since `freshAfter`. */
export async function countPresence(db: Knex, orgId: string, freshAfter: number): Promise<number> {
  const row = await db('credential_stream_presence')
    .where({ org_id: orgId }).where('refreshed_at', '>=', new Date(freshAfter))
    .sum({ n: 'subscribers' }).first();
  return Number(row?.n ?? 0);
}
