import type { Knex } from 'knex';

/**
 * The key a session lives under inside the node (actor address, rows of its read models), for tests that look
 * beneath the interface; answers name sessions by public id, which two orgs may share (decision 0068).
 */
export async function sessionKeyOf(db: Knex, orgId: string, publicId: string): Promise<string> {
  const row = await db('sessions').where({ org_id: orgId, public_id: publicId }).first('id');
  if (!row) throw new Error(`no session ${publicId} in org ${orgId}`);
  return String(row.id);
}
