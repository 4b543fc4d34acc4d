import { parseDocument, type Document } from 'yaml';

/**
 * What the editor reads from the YAML text while a person types: the graph the canvas draws and the places where the
 * text is not YAML. It parses as the server does (unique keys, no aliases expanded) but checks nothing else: the
 * server's validation is the one that counts, and its errors come back on save (yaml-paths.ts puts them on lines).
 */
export interface GraphNode {
  readonly id: string;
  readonly kind: string;
  /** A short reading of what the node does: an agent's prompt, a gate's title, a condition's expression. */
  readonly detail: string;
  /** The definition's object as written, which the canvas stores as its node (so version diffs name changed fields). */
  readonly source: Record<string, unknown>;
}

export interface GraphEdge {
  readonly source: string;
  readonly target: string;
  readonly when?: boolean;
}

export interface SyntaxProblem {
  readonly from: number;
  readonly to: number;
  readonly message: string;
}

export interface ReadDefinition {
  readonly doc: Document.Parsed;
  /** Where the text is not YAML; empty when it parses. */
  readonly syntax: readonly SyntaxProblem[];
  /** Undefined while the text is not a definition the canvas can draw (the reason is in `unreadable`). */
  readonly graph?: { readonly nodes: readonly GraphNode[]; readonly edges: readonly GraphEdge[] };
  readonly unreadable?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const detailOf = (node: Record<string, unknown>): string => {
  for (const key of ['prompt', 'title', 'when', 'verb']) if (typeof node[key] === 'string') return node[key] as string;
  if (typeof node.seconds === 'number') return `${node.seconds} s`;
  if (typeof node.maxIterations === 'number') return `at most ${node.maxIterations} times`;
  return '';
};

export function readDefinition(text: string): ReadDefinition {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  const syntax = doc.errors.map((e) => ({ from: e.pos[0], to: Math.max(e.pos[1], e.pos[0] + 1), message: e.message.split('\n')[0] ?? e.message }));
  if (syntax.length > 0) return { doc, syntax, unreadable: 'The YAML does not parse; the canvas shows the last version that did.' };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 0 });
  } catch (err) {
    return { doc, syntax: [{ from: 0, to: 1, message: (err as Error).message }], unreadable: 'The YAML uses aliases, which definitions may not.' };
  }
  if (!isObject(value)) return { doc, syntax, unreadable: 'A definition is a mapping (schemaVersion, name, trigger, nodes, edges).' };
  // v1.1 lists `steps` that run in order; v2 lists `nodes` joined by `edges`.
  const v11 = value.schemaVersion === 'v1.1';
  const list = v11 ? value.steps : value.nodes;
  if (list !== undefined && !Array.isArray(list)) return { doc, syntax, unreadable: `'${v11 ? 'steps' : 'nodes'}' must be a list.` };
  const nodes: GraphNode[] = [];
  const seen = new Set<string>();
  for (const raw of (list ?? []) as unknown[]) {
    if (!isObject(raw) || typeof raw.id !== 'string' || raw.id === '' || seen.has(raw.id)) continue;
    seen.add(raw.id);
    nodes.push({ id: raw.id, kind: typeof raw.kind === 'string' ? raw.kind : '?', detail: detailOf(raw), source: raw });
  }
  let edges: GraphEdge[];
  if (v11) {
    edges = nodes.slice(1).map((n, i) => ({ source: nodes[i]!.id, target: n.id }));
  } else {
    const rawEdges = value.edges ?? [];
    if (!Array.isArray(rawEdges)) return { doc, syntax, unreadable: "'edges' must be a list." };
    // An edge naming no node is left out of the drawing; the server names it on save.
    edges = rawEdges.filter((e): e is Record<string, unknown> => isObject(e) && seen.has(String(e.source)) && seen.has(String(e.target)))
      .map((e) => (typeof e.when === 'boolean' ? { source: String(e.source), target: String(e.target), when: e.when } : { source: String(e.source), target: String(e.target) }));
  }
  return { doc, syntax, graph: { nodes, edges } };
}

/**
 * The canvas as the workflow stores it (`nodes`/`edges` of a version), when the text reads as a definition: the
 * definition's own objects, so a version diff names the fields that changed; no positions, as the layout is
 * recomputed from the graph every time (graph-layout.ts).
 */
export function canvasOf(text: string): { nodes: Record<string, unknown>[]; edges: Record<string, unknown>[] } | undefined {
  const graph = readDefinition(text).graph;
  if (!graph) return undefined;
  return { nodes: graph.nodes.map((n) => ({ ...n.source })), edges: graph.edges.map((e) => ({ ...e })) };
}
