/**
 * What changed between two workflow versions, for people: nodes by id (added, removed, changed with the fields that
 * changed), edges by their source and target, and the YAML as aligned line pairs for a side-by-side view.
 */
export interface GraphDiff {
  readonly nodesAdded: string[];
  readonly nodesRemoved: string[];
  readonly nodesChanged: { id: string; fields: string[] }[];
  readonly edgesAdded: string[];
  readonly edgesRemoved: string[];
  readonly edgesChanged: string[];
}

type Node = Record<string, unknown> & { id?: unknown };
type Edge = Record<string, unknown> & { source?: unknown; target?: unknown };

const stable = (v: unknown): string => JSON.stringify(v, (_k, value: unknown) =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : value);

function byKey<T>(items: readonly T[], key: (item: T, i: number) => string): Map<string, T> {
  const map = new Map<string, T>();
  items.forEach((item, i) => map.set(key(item, i), item));
  return map;
}

const nodeKey = (n: Node, i: number) => (typeof n.id === 'string' ? n.id : `#${i}`);
const edgeKey = (e: Edge, i: number) =>
  typeof e.source === 'string' && typeof e.target === 'string' ? `${e.source} → ${e.target}` : `edge #${i}`;

export function diffGraph(from: { nodes: readonly Node[]; edges: readonly Edge[] }, to: { nodes: readonly Node[]; edges: readonly Edge[] }): GraphDiff {
  const a = byKey(from.nodes, nodeKey);
  const b = byKey(to.nodes, nodeKey);
  const nodesChanged: { id: string; fields: string[] }[] = [];
  for (const [id, node] of b) {
    const old = a.get(id);
    if (!old || stable(old) === stable(node)) continue;
    const fields = [...new Set([...Object.keys(old), ...Object.keys(node)])].filter((k) => stable(old[k]) !== stable(node[k])).sort();
    nodesChanged.push({ id, fields });
  }
  const ea = byKey(from.edges, edgeKey);
  const eb = byKey(to.edges, edgeKey);
  return {
    nodesAdded: [...b.keys()].filter((id) => !a.has(id)),
    nodesRemoved: [...a.keys()].filter((id) => !b.has(id)),
    nodesChanged,
    edgesAdded: [...eb.keys()].filter((k) => !ea.has(k)),
    edgesRemoved: [...ea.keys()].filter((k) => !eb.has(k)),
    edgesChanged: [...eb.keys()].filter((k) => ea.has(k) && stable(ea.get(k)) !== stable(eb.get(k))),
  };
}

export interface LinePair {
  readonly left: string | null;
  readonly right: string | null;
  readonly kind: 'same' | 'removed' | 'added' | 'changed';
}

/** Longest-common-subsequence alignment of two texts' lines; a removal next to an addition becomes one changed pair. */
export function alignLines(fromText: string, toText: string): LinePair[] {
  const a = fromText.split('\n');
  const b = toText.split('\n');
  if (a.length * b.length > 4_000_000) return a.map((l, i) => ({ left: l, right: b[i] ?? null, kind: l === b[i] ? 'same' : 'changed' }));
  const lcs: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const raw: LinePair[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) raw.push({ left: a[i++]!, right: b[j++]!, kind: 'same' });
    else if (j < b.length && (i >= a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) raw.push({ left: null, right: b[j++]!, kind: 'added' });
    else raw.push({ left: a[i++]!, right: null, kind: 'removed' });
  }
  const pairs: LinePair[] = [];
  for (let k = 0; k < raw.length; k++) {
    const here = raw[k]!;
    const next = raw[k + 1];
    if (here.kind === 'removed' && next?.kind === 'added') {
      pairs.push({ left: here.left, right: next.right, kind: 'changed' });
      k++;
    } else pairs.push(here);
  }
  return pairs;
}
