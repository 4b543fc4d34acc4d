import type { Knex } from 'knex';
import { entityKey, storedGraph, type GraphProjection } from '../../../storage/analytics/graph.js';
import { layoutGraph } from './layout.js';

/**
 * The project knowledge graph as the canvas shows it (spec 2.5, decision 0013): the bounded window the read model
 * serves (storage/analytics/graph.ts), each node placed by the force layout. Nodes are keyed by their (type, name)
 * identity, so a node keeps its place while the graph around it grows.
 */
export async function graphProjection(db: Knex, orgId: string, projectId: string, windowDays: number | null, now: number): Promise<GraphProjection> {
  const graph = await storedGraph(db, orgId, projectId, windowDays, now);
  const keyOf = new Map(graph.nodes.map((n) => [n.id, entityKey(n)]));
  const positions = layoutGraph([...keyOf.values()].map((key) => ({ key })),
    graph.edges.map((e) => ({ source: keyOf.get(e.source)!, target: keyOf.get(e.target)! })));
  return { ...graph, nodes: graph.nodes.map((n) => ({ ...n, position: positions.get(keyOf.get(n.id)!)! })) };
}
