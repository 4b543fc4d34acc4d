import { canonicalJson } from '../../../ops/kernel/canonical-json.js';

/**
 * VersionDiff (spec 2.1) between two snapshots' canvases. Nodes are matched by `id` and compared by content
 * (canonical JSON, so key order does not count as a change); edges have no stable identity on every canvas, so
 * they are compared as a multiset of their canonical content and reported as counts.
 */
export interface VersionDiff {
  readonly fromVersion: number;
  readonly toVersion: number;
  readonly nodesAdded: string[];
  readonly nodesRemoved: string[];
  readonly nodesModified: string[];
  readonly edgesAdded: number;
  readonly edgesRemoved: number;
  readonly yamlChanged: boolean;
}

export interface DiffSide {
  readonly version: number;
  readonly nodes: readonly unknown[];
  readonly edges: readonly unknown[];
  readonly definitionYaml: string;
}

export function diffVersions(from: DiffSide, to: DiffSide): VersionDiff {
  const fromNodes = nodesById(from.nodes);
  const toNodes = nodesById(to.nodes);
  const nodesAdded = [...toNodes.keys()].filter((id) => !fromNodes.has(id));
  const nodesRemoved = [...fromNodes.keys()].filter((id) => !toNodes.has(id));
  const nodesModified = [...toNodes.keys()].filter((id) => fromNodes.has(id) && fromNodes.get(id) !== toNodes.get(id));
  const remaining = counts(from.edges);
  let edgesAdded = 0;
  for (const edge of to.edges) {
    const key = canonicalJson(edge);
    const n = remaining.get(key) ?? 0;
    if (n > 0) remaining.set(key, n - 1);
    else edgesAdded += 1;
  }
  const edgesRemoved = [...remaining.values()].reduce((a, b) => a + b, 0);
  return {
    fromVersion: from.version, toVersion: to.version,
    nodesAdded, nodesRemoved, nodesModified, edgesAdded, edgesRemoved,
    yamlChanged: from.definitionYaml !== to.definitionYaml,
  };
}

/** Nodes without a string id cannot be matched; they are keyed by their position so they still count. */
function nodesById(nodes: readonly unknown[]): Map<string, string> {
  const map = new Map<string, string>();
  nodes.forEach((node, i) => {
    const id = typeof node === 'object' && node !== null && typeof (node as { id?: unknown }).id === 'string'
      ? (node as { id: string }).id : `#${i}`;
    map.set(id, canonicalJson(node));
  });
  return map;
}

function counts(edges: readonly unknown[]): Map<string, number> {
  const map = new Map<string, number>();
  for (const edge of edges) {
    const key = canonicalJson(edge);
    map.set(key, (map.get(key) ?? 0) + 1);
  }
  return map;
}
