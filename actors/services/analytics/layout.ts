import { createHash } from 'node:crypto';

/**
 * Server-computed positions for the knowledge-graph projection: a Fruchterman–Reingold force layout with a
 * fixed number of iterations and a cooling schedule, started from positions hashed from each node's stable key.
 * Nothing random and nothing order-dependent: nodes are sorted by key and edges by (source, target) key before
 * any arithmetic, so the same graph yields the same coordinates on every node and every call, whatever order the
 * rows came back in. Cost is O(iterations × (n² + e)); the projection caps n and e (storage/analytics/graph.ts),
 * which keeps one layout to a few milliseconds.
 */

export const LAYOUT_SIZE = 1000;
const ITERATIONS = 60;

export interface LayoutNode {
  /** Stable identity of the node within its graph (the entity's type and name), used for seeding and ordering. */
  readonly key: string;
}

export interface LayoutEdge {
  readonly source: string;
  readonly target: string;
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function seedPosition(key: string): { x: number; y: number } {
  const h = createHash('sha256').update(key, 'utf8').digest();
  return { x: (h.readUInt32LE(0) / 4294967296) * LAYOUT_SIZE, y: (h.readUInt32LE(4) / 4294967296) * LAYOUT_SIZE };
}

/** Positions keyed by node key, rounded to hundredths (the wire carries what was computed, reproducibly). */
export function layoutGraph(nodes: readonly LayoutNode[], edges: readonly LayoutEdge[]): Map<string, { x: number; y: number }> {
  const keys = [...new Set(nodes.map((n) => n.key))].sort(compare);
  const index = new Map(keys.map((k, i) => [k, i]));
  const n = keys.length;
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  keys.forEach((k, i) => {
    const p = seedPosition(k);
    xs[i] = p.x;
    ys[i] = p.y;
  });
  const links = edges
    .map((e) => [index.get(e.source), index.get(e.target)] as const)
    .filter((pair): pair is readonly [number, number] => pair[0] !== undefined && pair[1] !== undefined && pair[0] !== pair[1])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);

  if (n > 1) {
    const k = Math.sqrt((LAYOUT_SIZE * LAYOUT_SIZE) / n);
    const dx = new Float64Array(n);
    const dy = new Float64Array(n);
    let temperature = LAYOUT_SIZE / 10;
    for (let iter = 0; iter < ITERATIONS; iter++) {
      dx.fill(0);
      dy.fill(0);
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          let ddx = xs[i]! - xs[j]!;
          let ddy = ys[i]! - ys[j]!;
          let dist = Math.hypot(ddx, ddy);
          if (dist < 0.01) {
            // Coincident nodes: separate them along a direction fixed by their indices, not by chance.
            ddx = ((i * 7 + j * 13) % 17) - 8 || 1;
            ddy = ((i * 11 + j * 3) % 19) - 9 || 1;
            dist = Math.hypot(ddx, ddy);
          }
          const force = (k * k) / dist;
          const fx = (ddx / dist) * force;
          const fy = (ddy / dist) * force;
          dx[i]! += fx; dy[i]! += fy;
          dx[j]! -= fx; dy[j]! -= fy;
        }
      }
      for (const [a, b] of links) {
        const ddx = xs[a]! - xs[b]!;
        const ddy = ys[a]! - ys[b]!;
        const dist = Math.max(Math.hypot(ddx, ddy), 0.01);
        const force = (dist * dist) / k;
        const fx = (ddx / dist) * force;
        const fy = (ddy / dist) * force;
        dx[a]! -= fx; dy[a]! -= fy;
        dx[b]! += fx; dy[b]! += fy;
      }
      for (let i = 0; i < n; i++) {
        const len = Math.hypot(dx[i]!, dy[i]!);
        if (len > 0) {
          const step = Math.min(len, temperature);
          xs[i] = Math.min(LAYOUT_SIZE, Math.max(0, xs[i]! + (dx[i]! / len) * step));
          ys[i] = Math.min(LAYOUT_SIZE, Math.max(0, ys[i]! + (dy[i]! / len) * step));
        }
      }
      temperature *= 0.95;
    }
  }
  const round = (v: number): number => Math.round(v * 100) / 100;
  return new Map(keys.map((key, i) => [key, { x: round(xs[i]!), y: round(ys[i]!) }]));
}
