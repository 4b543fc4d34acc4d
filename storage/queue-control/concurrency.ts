import type { Knex } from 'knex';
import type { ConcurrencyStrategy, ProjectConcurrency } from '../../schemas/queue-control/concurrency.js';
import type { AuditIn } from './pauses.js';

/**
 * Projects' concurrency settings and what the limit counts (migration 0051, decision 0081). A session holds a place
 * under its key from its claim until it ends; the count is org-wide, so a key two projects share (one tracker issue)
 * is limited across both, each project's own sessions by its own setting.
 */

type Row = Record<string, unknown>;

/** The statuses that hold a place under a key: those of a session a worker holds. */
export const HOLDING_STATUSES = ['claimed', 'running', 'paused', 'finalizing'] as const;

/** The project's setting, or null while it has none (keys recorded, no limit). */
export async function projectConcurrency(db: Knex, orgId: string, projectId: string): Promise<ProjectConcurrency | null> {
  const row = await db('project_concurrency').where({ org_id: orgId, project_id: projectId }).first('default_limit', 'strategy') as Row | undefined;
  return row === undefined ? null : { defaultLimit: Number(row.default_limit), strategy: row.strategy as ConcurrencyStrategy };
}

/** Sets the project's setting; audits it only when it changed. The caller has checked the project is the org's. */
export async function setProjectConcurrency(
  db: Knex, orgId: string, projectId: string, setting: ProjectConcurrency, by: string, at: Date, audit: AuditIn,
): Promise<{ changed: boolean }> {
  return db.transaction(async (trx) => {
    const before = await trx('project_concurrency').where({ org_id: orgId, project_id: projectId }).forUpdate().first('default_limit', 'strategy') as Row | undefined;
    if (before !== undefined && Number(before.default_limit) === setting.defaultLimit && before.strategy === setting.strategy) return { changed: false };
    await trx('project_concurrency')
      .insert({ project_id: projectId, org_id: orgId, default_limit: setting.defaultLimit, strategy: setting.strategy, updated_at: at, updated_by: by })
      .onConflict('project_id').merge(['default_limit', 'strategy', 'updated_at', 'updated_by']);
    await audit(trx);
    return { changed: true };
  });
}

/** How many sessions of the org hold a place under the key now. */
export async function heldUnderKey(db: Knex, orgId: string, key: string): Promise<number> {
  const row = await db('sessions').where({ org_id: orgId, concurrency_key: key }).whereIn('status', [...HOLDING_STATUSES])
    .first(db.raw('count(*)::int as n')) as Row | undefined;
  return Number(row?.n ?? 0);
}

/** How many sessions of the org are under the key and not ended: held, or waiting to be. */
export async function liveUnderKey(db: Knex, orgId: string, key: string): Promise<number> {
  const row = await db('sessions').where({ org_id: orgId, concurrency_key: key }).whereIn('status', ['pending', ...HOLDING_STATUSES])
    .first(db.raw('count(*)::int as n')) as Row | undefined;
  return Number(row?.n ?? 0);
}

/** The org's sessions that hold a place under the key, oldest claim first: actor key, public id and run. */
export async function holdersUnderKey(db: Knex, orgId: string, key: string): Promise<Array<{ key: string; publicId: string; epoch: number }>> {
  const rows = await db('sessions').where({ org_id: orgId, concurrency_key: key }).whereIn('status', [...HOLDING_STATUSES])
    .orderBy([{ column: 'claimed_at' }, { column: 'id' }]).select('id', 'public_id', 'epoch') as Row[];
  return rows.map((r) => ({ key: String(r.id), publicId: String(r.public_id), epoch: Number(r.epoch) }));
}

/**
 * For the sessions a poll found, how many more of each key may be claimed now: the project's limit less the places
 * held. Keys with no limit (no key, or a project with no setting) are absent: nothing caps them.
 */
export async function roomUnderKeys(db: Knex, orgId: string, candidates: readonly { projectId: string; key: string }[]): Promise<Map<string, number>> {
  const room = new Map<string, number>();
  if (candidates.length === 0) return room;
  const projects = [...new Set(candidates.map((c) => c.projectId))];
  const keys = [...new Set(candidates.map((c) => c.key))];
  const [settings, held] = await Promise.all([
    db('project_concurrency').where({ org_id: orgId }).whereIn('project_id', projects).select('project_id', 'default_limit') as Promise<Row[]>,
    db('sessions').where({ org_id: orgId }).whereIn('concurrency_key', keys).whereIn('status', [...HOLDING_STATUSES])
      .groupBy('concurrency_key').select('concurrency_key', db.raw('count(*)::int as n')) as Promise<Row[]>,
  ]);
  const limitOf = new Map(settings.map((r) => [String(r.project_id), Number(r.default_limit)]));
  const heldOf = new Map(held.map((r) => [String(r.concurrency_key), Number(r.n)]));
  for (const c of candidates) {
    const limit = limitOf.get(c.projectId);
    if (limit === undefined || room.has(c.key)) continue;
    room.set(c.key, Math.max(0, limit - (heldOf.get(c.key) ?? 0)));
  }
  return room;
}
