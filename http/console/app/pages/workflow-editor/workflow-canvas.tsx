import { useMemo } from 'preact/hooks';
import type { GraphEdge, GraphNode } from './definition-graph.js';
import { clipText, MAX_DETAIL_CHARS, placeGraph } from './graph-layout.js';

/**
 * The workflow drawn as a graph: a box per node (id, kind, what it does), an arrow per edge (`yes`/`no` on the
 * branches of a condition or loop). SVG attributes only (no inline styles, which the CSP refuses); the colours come
 * from the stylesheet. The drawing is an image to assistive technology; the same graph is listed in words beside it,
 * so nothing is only visual.
 */
export function WorkflowCanvas({ nodes, edges, title, stale }: { nodes: readonly GraphNode[]; edges: readonly GraphEdge[]; title: string; stale?: string }) {
  const placed = useMemo(() => placeGraph(nodes, edges), [nodes, edges]);
  const titleId = `canvas-${title.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`;
  const arrowId = `${titleId}-arrow`;
  return (
    <figure class="workflow-canvas" data-canvas-nodes={nodes.length} data-canvas-edges={edges.length}>
      <figcaption id={titleId}>{title}{stale ? <span class="muted"> — {stale}</span> : null}</figcaption>
      {nodes.length === 0 ? <p class="muted">No nodes yet: add some under <code>nodes:</code>.</p> : (
        <div class="canvas-scroll" tabIndex={0} role="group" aria-labelledby={titleId}>
          <svg viewBox={`0 0 ${placed.width} ${placed.height}`} width={placed.width} height={placed.height} role="img" aria-label={describe(nodes, edges)}>
            <defs>
              <marker id={arrowId} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                <path d="M 0 0 L 10 5 L 0 10 z" class="canvas-arrowhead" />
              </marker>
            </defs>
            {placed.edges.map((e, i) => (
              <g key={`e${i}`} class="canvas-edge" data-edge={`${e.edge.source}->${e.edge.target}`}>
                <path d={pathOf(e.points)} marker-end={`url(#${arrowId})`} />
                {e.label ? <text x={e.label.x} y={e.label.y + 4} text-anchor="middle" class="canvas-edge-label">{e.edge.when ? 'yes' : 'no'}</text> : null}
              </g>
            ))}
            {placed.nodes.map((p) => (
              <g key={p.node.id} class={`canvas-node canvas-kind-${kindClass(p.node.kind)}`} data-node={p.node.id} transform={`translate(${p.x} ${p.y})`}>
                <rect width={p.width} height={p.height} rx="8" />
                <text x="12" y="20" class="canvas-node-id">{p.node.id} <tspan class="canvas-node-kind">· {p.node.kind}</tspan></text>
                <text x="12" y="40" class="canvas-node-detail">{clipText(p.node.detail, MAX_DETAIL_CHARS)}</text>
              </g>
            ))}
          </svg>
        </div>
      )}
    </figure>
  );
}

const KNOWN_KINDS = new Set(['agent', 'approval', 'condition', 'loop', 'wait', 'plugin']);
const kindClass = (kind: string) => (KNOWN_KINDS.has(kind) ? kind : 'other');

function pathOf(points: readonly { x: number; y: number }[]): string {
  if (points.length === 0) return '';
  return points.map((p, i) => `${i === 0 ? 'M' : 'L'} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(' ');
}

/** The graph in words, for a screen reader: each node with its kind, then where each edge leads. */
function describe(nodes: readonly GraphNode[], edges: readonly GraphEdge[]): string {
  const list = nodes.map((n) => `${n.id} (${n.kind})`).join(', ');
  const links = edges.map((e) => `${e.source} to ${e.target}${e.when === undefined ? '' : e.when ? ' when yes' : ' when no'}`).join('; ');
  return `Workflow graph with ${nodes.length} node(s): ${list}.${links ? ` Edges: ${links}.` : ''}`;
}
