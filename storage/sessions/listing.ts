import type { Knex } from 'knex';
import { decodeCursor, encodeCursor } from '../page-cursor.js';

/**
 * The org's sessions as the console lists them (newest first, filtered, paged) and one session's status timeline.
 * Scoped by org like every session read; the caller narrows `projectIds` to what it may read.
 */
export interface SessionListItem {
  readonly id: string;
  readonly projectId: string;
  readonly status: string;
  /** The first line of the prompt, at most 200 characters. */
  readonly title: string;
  readonly trackerIssue: string | null;
  readonly workerId: string | null;
  readonly costUsd: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface SessionFilter {
  readonly statuses?: readonly string[];
  /** Only these projects; an empty list matches nothing. */
  readonly projectIds?: readonly string[];
  readonly limit: number;
  readonly cursor?: string;
}

export interface TimelineEntry {
  readonly from: string;
  readonly status: string;
  readonly run: number;
  readonly workerId: string | null;
  readonly at: string;
}

const iso = (v: unknown): string => (v instanceof Date ? v : new Date(String(v))).toISOString();

export async function listSessions(db: Knex, orgId: string, filter: SessionFilter): Promise<{ sessions: SessionListItem[]; nextCursor: string | null }> {
  if (filter.projectIds !== undefined && filter.projectIds.length === 0) return { sessions: [], nextCursor: null };
  const q = db('sessions').where({ org_id: orgId })
    .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
    .limit(filter.limit + 1)
    .select('id', 'public_id', 'project_id', 'status', 'prompt', 'tracker_issue', 'worker_id', 'cost_usd', 'created_at', 'updated_at');
  if (filter.statuses !== undefined && filter.statuses.length > 0) q.whereIn('status', [...filter.statuses]);
  if (filter.projectIds !== undefined) q.whereIn('project_id', [...filter.projectIds]);
  if (filter.cursor !== undefined) {
    const { createdAt, id } = decodeCursor(filter.cursor, /^[0-9a-f]{16}$/);
    q.andWhere((w) => w.where('created_at', '<', createdAt).orWhere((same) => same.where('created_at', '=', createdAt).andWhere('id', '<', id)));
  }
  const rows = (await q) as Record<string, unknown>[];
  const kept = rows.slice(0, filter.limit);
  const page = kept.map((r): SessionListItem => ({
    id: r.public_id as string,
    projectId: r.project_id as string,
    status: r.status as string,
    title: titleOf(r.prompt as string),
    trackerIssue: (r.tracker_issue as string | null) ?? null,
    workerId: (r.worker_id as string | null) ?? null,
    costUsd: Number(r.cost_usd),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  }));
  // The cursor orders by key: public ids are shown, but two orgs' and an older session's may repeat.
  const last = kept[kept.length - 1];
  return { sessions: page, nextCursor: rows.length > filter.limit && last ? encodeCursor(iso(last.created_at), last.id as string) : null };
}

export async function sessionTimeline(db: Knex, orgId: string, sessionId: string): Promise<TimelineEntry[]> {
  const rows = await db('session_transitions').where({ org_id: orgId, session_id: sessionId })
    .orderBy([{ column: 'at' }, { column: 'id' }]).limit(500)
    .select('from_status', 'to_status', 'epoch', 'worker_id', 'at');
  return rows.map((r: Record<string, unknown>) => ({
    from: r.from_status as string, status: r.to_status as string, run: Number(r.epoch),
    workerId: (r.worker_id as string | null) ?? null, at: iso(r.at),
  }));
}

function titleOf(prompt: string): string {
  const line = prompt.split('\n', 1)[0]!.trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
