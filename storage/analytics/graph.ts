import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';

/**
 * The project knowledge graph (spec 2.5; decision 0013). Sessions record what they learnt through
 * `POST /api/projects/{projectId}/graph/entities`: entities are identified within a project by (type, name) and
 * upserted; relationships name their ends by (type, name) and are reinforced (weight + 1) when recorded again.
 * A request that names a session counts one recall per entity per distinct session.
 *
 * The projection is bounded: only entities touched or recalled inside the freshness window, the top
 * `GRAPH_MAX_NODES` of them by importance (then feedback, then id), the relationships among those touched in the
 * window, the top `GRAPH_MAX_EDGES` by weight; `truncated` / `edgesTruncated` say when a cap cut something off.
 */

/** A force layout is O(n²) per iteration and a canvas of more nodes is unreadable; 200 keeps both in check. */
export const GRAPH_MAX_NODES = 200;
export const GRAPH_MAX_EDGES = 500;
export const DEFAULT_WINDOW_DAYS = 30;
const DAY_MS = 86_400_000;

export interface EntityInput {
  readonly type: string;
  readonly name: string;
  readonly description?: string;
  readonly properties?: Record<string, unknown>;
  readonly importanceWeight?: number;
  readonly feedbackWeight?: number;
}

export interface RelationshipInput {
  readonly source: { type: string; name: string };
  readonly target: { type: string; name: string };
  readonly relationshipName: string;
}

/** An entity is known within its project by (type, name): that identity as one string. */
export const entityKey = (e: { type: string; name: string }): string => `${e.type}\u0000${e.name}`;
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export async function recordGraph(
  db: Knex,
  input: { orgId: string; projectId: string; sessionId: string | null; entities: readonly EntityInput[]; relationships: readonly RelationshipInput[]; now: number },
): Promise<{ entities: number; relationships: number; recalls: number }> {
  const at = new Date(input.now);
  return db.transaction(async (trx) => {
    const ids = new Map<string, string>();
    let recalls = 0;
    // Sorted so two concurrent writers touching the same entities lock them in the same order.
    const entities = [...new Map(input.entities.map((e) => [entityKey(e), e])).values()].sort((a, b) => cmp(entityKey(a), entityKey(b)));
    for (const e of entities) {
      const merge: Record<string, unknown> = { updated_at: at };
      if (e.description !== undefined) merge.description = e.description;
      if (e.properties !== undefined) merge.properties = trx.raw('graph_entities.properties || ?::jsonb', [JSON.stringify(e.properties)]);
      if (e.importanceWeight !== undefined) merge.importance_weight = e.importanceWeight;
      if (e.feedbackWeight !== undefined) merge.feedback_weight = e.feedbackWeight;
      const [row] = await trx('graph_entities').insert({
        id: randomUUID(), org_id: input.orgId, project_id: input.projectId, type: e.type, name: e.name,
        description: e.description ?? '', properties: JSON.stringify(e.properties ?? {}),
        importance_weight: e.importanceWeight ?? 1, feedback_weight: e.feedbackWeight ?? 0, created_at: at, updated_at: at,
      }).onConflict(['project_id', 'type', 'name']).merge(merge).returning('id');
      const id = (row as { id: string }).id;
      ids.set(entityKey(e), id);
      if (input.sessionId !== null) {
        const fresh = await trx('graph_recalls').insert({ entity_id: id, session_id: input.sessionId, recalled_at: at })
          .onConflict(['entity_id', 'session_id']).ignore().returning('entity_id');
        if (fresh.length > 0) recalls++;
        await trx('graph_entities').where({ id }).update({
          last_recalled_at: at,
          ...(fresh.length > 0 ? { recall_sessions: trx.raw('recall_sessions + 1') } : {}),
        });
      }
    }
    const missing = input.relationships.flatMap((r) => [r.source, r.target]).filter((end) => !ids.has(entityKey(end)));
    if (missing.length > 0) {
      // By name, then matched on (type, name) here: a composite IN list did not match on every engine.
      const known = await trx('graph_entities').where({ project_id: input.projectId })
        .whereIn('name', [...new Set(missing.map((m) => m.name))]).select('id', 'type', 'name');
      const wanted = new Set(missing.map(entityKey));
      for (const k of known as { id: string; type: string; name: string }[]) if (wanted.has(entityKey(k))) ids.set(entityKey(k), k.id);
    }
    const relationships = [...input.relationships].sort((a, b) =>
      cmp(`${entityKey(a.source)}\u0001${entityKey(a.target)}\u0001${a.relationshipName}`, `${entityKey(b.source)}\u0001${entityKey(b.target)}\u0001${b.relationshipName}`));
    for (const [index, r] of relationships.entries()) {
      const source = ids.get(entityKey(r.source));
      const target = ids.get(entityKey(r.target));
      if (source === undefined || target === undefined) {
        throw new TroupeError('VALIDATION_FAILED', 'a relationship names an entity that is neither in this request nor in the project', {
          field: `/relationships/${input.relationships.indexOf(r)}`, index,
        });
      }
      await trx('graph_relationships').insert({
        id: randomUUID(), org_id: input.orgId, project_id: input.projectId, source_id: source, target_id: target,
        relationship_name: r.relationshipName, weight: 1, created_at: at, updated_at: at,
      }).onConflict(['source_id', 'target_id', 'relationship_name']).merge({ weight: trx.raw('graph_relationships.weight + 1'), updated_at: at });
    }
    return { entities: entities.length, relationships: relationships.length, recalls };
  });
}

export interface GraphNode {
  id: string; name: string; type: string; description: string; createdAt: string;
  importanceWeight: number; feedbackWeight: number; properties: Record<string, unknown>;
  recall: { sessions: number; lastRecalled: string };
  position: { x: number; y: number };
}
/** A node as stored, before the canvas layout places it (actors/services/analytics/graph.ts). */
export type StoredGraphNode = Omit<GraphNode, 'position'>;
export interface GraphEdge { id: string; source: string; target: string; relationshipName: string }
export interface GraphProjection { nodes: GraphNode[]; edges: GraphEdge[]; truncated: boolean; edgesTruncated: boolean; window: { days: number } }
export type StoredGraph = Omit<GraphProjection, 'nodes'> & { nodes: StoredGraphNode[] };

/**
 * `windowDays` null is `window=all`: no freshness bound, and `window.days` reports the span the projection
 * actually covers (days back to the project's oldest entity, at least 1), since the spec makes it an integer.
 */
export async function storedGraph(db: Knex, orgId: string, projectId: string, windowDays: number | null, now: number): Promise<StoredGraph> {
  const cutoff = windowDays === null ? null : new Date(now - windowDays * DAY_MS);
  const fresh = (q: Knex.QueryBuilder, column: string): Knex.QueryBuilder => (cutoff === null ? q : q.where(column, '>=', cutoff));
  const base = () => {
    const q = db('graph_entities').where({ org_id: orgId, project_id: projectId });
    return cutoff === null ? q : q.whereRaw('greatest(updated_at, coalesce(last_recalled_at, updated_at)) >= ?', [cutoff]);
  };
  const [countRow, rows, oldest] = await Promise.all([
    base().count<{ n: string | number }[]>('* as n'),
    base().orderBy([{ column: 'importance_weight', order: 'desc' }, { column: 'feedback_weight', order: 'desc' }, { column: 'id' }]).limit(GRAPH_MAX_NODES),
    windowDays === null ? db('graph_entities').where({ org_id: orgId, project_id: projectId }).min('created_at as at').first() : undefined,
  ]);
  const ids = (rows as Record<string, unknown>[]).map((r) => r.id as string);
  let edgeRows: Record<string, unknown>[] = [];
  let edgeCount = 0;
  if (ids.length > 0) {
    const edgeBase = () => fresh(db('graph_relationships').where({ org_id: orgId, project_id: projectId })
      .whereIn('source_id', ids).whereIn('target_id', ids), 'updated_at');
    const [c, e] = await Promise.all([
      edgeBase().count<{ n: string | number }[]>('* as n'),
      edgeBase().orderBy([{ column: 'weight', order: 'desc' }, { column: 'updated_at', order: 'desc' }, { column: 'id' }]).limit(GRAPH_MAX_EDGES),
    ]);
    edgeCount = Number(c[0]?.n ?? 0);
    edgeRows = e as Record<string, unknown>[];
  }
  const iso = (v: unknown): string => new Date(v as string).toISOString();
  const nodes = (rows as Record<string, unknown>[]).map((r): StoredGraphNode => ({
    id: r.id as string,
    name: r.name as string,
    type: r.type as string,
    description: r.description as string,
    createdAt: iso(r.created_at),
    importanceWeight: Number(r.importance_weight),
    feedbackWeight: Number(r.feedback_weight),
    properties: (typeof r.properties === 'string' ? JSON.parse(r.properties) : r.properties) as Record<string, unknown>,
    // Never recalled: sessions 0 and the entity's creation time, since the spec makes lastRecalled a string.
    recall: { sessions: Number(r.recall_sessions), lastRecalled: iso(r.last_recalled_at ?? r.created_at) },
  }));
  const edges = edgeRows.map((e): GraphEdge => ({
    id: e.id as string, source: e.source_id as string, target: e.target_id as string, relationshipName: e.relationship_name as string,
  }));
  const oldestAt = (oldest as { at: unknown } | undefined)?.at;
  const days = windowDays ?? (oldestAt == null ? 1 : Math.max(1, Math.ceil((now - new Date(oldestAt as string).getTime()) / DAY_MS)));
  return { nodes, edges, truncated: Number(countRow[0]?.n ?? 0) > ids.length, edgesTruncated: edgeCount > edges.length, window: { days } };
}
