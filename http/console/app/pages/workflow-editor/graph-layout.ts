import { Graph, layout } from '@dagrejs/dagre';
import type { GraphEdge, GraphNode } from './definition-graph.js';

/**
 * Places a definition's graph for drawing: dagre's layered layout, top to bottom (ops/decisions/0089: small and
 * synchronous, so the canvas follows each parse without a worker). Boxes are sized from their text, so long prompts
 * do not overflow; the layout is a pure function of the graph, which is why the canvas stores no positions.
 */
export const NODE_HEIGHT = 52;
const CHAR_WIDTH = 7.2;
export const MAX_DETAIL_CHARS = 34;

export interface PlacedNode { readonly node: GraphNode; readonly x: number; readonly y: number; readonly width: number; readonly height: number }
export interface PlacedEdge { readonly edge: GraphEdge; readonly points: readonly { x: number; y: number }[]; readonly label?: { x: number; y: number } }
export interface Placed { readonly nodes: readonly PlacedNode[]; readonly edges: readonly PlacedEdge[]; readonly width: number; readonly height: number }

export const clipText = (text: string, max: number): string => {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
};

export function placeGraph(nodes: readonly GraphNode[], edges: readonly GraphEdge[]): Placed {
  const g = new Graph<{ rankdir: 'TB' }, { width: number; height: number; x?: number; y?: number }, { width?: number; height?: number; points?: { x: number; y: number }[]; x?: number; y?: number }>({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: 44, marginx: 12, marginy: 12 } as { rankdir: 'TB' });
  for (const node of nodes) {
    const longest = Math.max(node.id.length + 2, `${node.kind}`.length, clipText(node.detail, MAX_DETAIL_CHARS).length);
    g.setNode(node.id, { width: Math.max(120, Math.round(longest * CHAR_WIDTH) + 24), height: NODE_HEIGHT });
  }
  edges.forEach((edge, i) => {
    g.setEdge(edge.source, edge.target, edge.when === undefined ? {} : { width: 36, height: 16 }, String(i));
  });
  layout(g);
  const placed: PlacedNode[] = nodes.map((node) => {
    const at = g.node(node.id);
    return { node, x: (at.x ?? 0) - at.width / 2, y: (at.y ?? 0) - at.height / 2, width: at.width, height: at.height };
  });
  const placedEdges: PlacedEdge[] = edges.map((edge, i) => {
    const at = g.edge(edge.source, edge.target, String(i));
    const points = at?.points ?? [];
    return { edge, points, ...(edge.when !== undefined && at?.x !== undefined && at.y !== undefined ? { label: { x: at.x, y: at.y } } : {}) };
  });
  const graph = g.graph() as { width?: number; height?: number };
  return { nodes: placed, edges: placedEdges, width: Math.max(graph.width ?? 0, 160), height: Math.max(graph.height ?? 0, 60) };
}
