import type { Knex } from 'knex';

/**
 * Finding a session by one of its names in an org (decision 0068). What is found never changes for a session — its key,
 * its public id, its project — so each node keeps what it found: a worker's status reports, output and steps find
 * their session without a read after the first. Only what was found is kept (a session dispatched later must be
 * found), a bounded number of names per database, oldest dropped first.
 */
export interface FoundSession {
  /** The name inside the node: actor address, rows, ledger keys. */
  readonly key: string;
  /** The name every answer shows. */
  readonly publicId: string;
  readonly projectId: string;
}

const MAX_REMEMBERED = 50_000;
const remembered = new WeakMap<Knex, Map<string, FoundSession>>();

function memoryOf(db: Knex): Map<string, FoundSession> {
  let memory = remembered.get(db);
  if (memory === undefined) {
    memory = new Map();
    remembered.set(db, memory);
  }
  return memory;
}

/** Keeps what a node learnt of a session (a dispatch it answered), so the first report on it needs no read either. */
export function rememberSession(db: Knex, orgId: string, found: FoundSession): void {
  const memory = memoryOf(db);
  memory.set(`${orgId}/${found.publicId}`, found);
  if (memory.size > MAX_REMEMBERED) memory.delete(memory.keys().next().value!);
}

/**
 * The org's session named `name`: its public id, or the key an older session was shown under. Undefined when absent
 * or another org's. When two sessions of the org answer to the name, the one whose key it is wins: that is the session
 * a client holding an older id was given.
 */
export async function findSession(db: Knex, orgId: string, name: string): Promise<FoundSession | undefined> {
  const memory = memoryOf(db);
  const known = memory.get(`${orgId}/${name}`);
  if (known !== undefined) return known;
  const row = await db('sessions').where({ org_id: orgId }).andWhere((q) => q.where('public_id', name).orWhere('id', name))
    .orderByRaw('(id = ?) desc, created_at', [name]).first('id', 'public_id', 'project_id');
  if (!row) return undefined;
  const found = { key: String(row.id), publicId: String(row.public_id), projectId: String(row.project_id) };
  memory.set(`${orgId}/${name}`, found);
  if (memory.size > MAX_REMEMBERED) memory.delete(memory.keys().next().value!);
  return found;
}
