// Invariant: the graph layout is a pure function of the graph: the same nodes and edges give identical positions
// whatever order they arrive in, every position lies on the canvas, and linked nodes end up nearer each other
// than unlinked ones (the layout carries information, it is not a hash scatter).
import { expect } from 'chai';
import { LAYOUT_SIZE, layoutGraph } from '../../../actors/services/analytics/layout.js';

const nodes = Array.from({ length: 40 }, (_, i) => ({ key: `concept\u0000n${i}` }));
const edges = Array.from({ length: 39 }, (_, i) => ({ source: `concept\u0000n${i}`, target: `concept\u0000n${(i * 7 + 3) % 40}` }));

describe('graph layout', () => {
  it('gives the same positions for the same graph in any order', () => {
    const a = layoutGraph(nodes, edges);
    const b = layoutGraph([...nodes].reverse(), [...edges].reverse());
    expect([...a.entries()].sort()).to.deep.equal([...b.entries()].sort());
  });

  it('changes when the graph changes', () => {
    const a = layoutGraph(nodes, edges);
    const b = layoutGraph(nodes, edges.slice(1));
    expect([...a.values()]).to.not.deep.equal([...b.values()]);
  });

  it('keeps every node on the canvas with finite coordinates', () => {
    for (const p of layoutGraph(nodes, edges).values()) {
      expect(p.x).to.be.within(0, LAYOUT_SIZE);
      expect(p.y).to.be.within(0, LAYOUT_SIZE);
    }
  });

  it('pulls linked nodes together', () => {
    const pos = layoutGraph(nodes, edges);
    const dist = (a: string, b: string): number => Math.hypot(pos.get(a)!.x - pos.get(b)!.x, pos.get(a)!.y - pos.get(b)!.y);
    const linked = edges.map((e) => dist(e.source, e.target));
    const linkedSet = new Set(edges.map((e) => `${e.source}|${e.target}`));
    const unlinked: number[] = [];
    for (const a of nodes) for (const b of nodes) {
      if (a.key < b.key && !linkedSet.has(`${a.key}|${b.key}`) && !linkedSet.has(`${b.key}|${a.key}`)) unlinked.push(dist(a.key, b.key));
    }
    const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(mean(linked)).to.be.below(mean(unlinked));
  });

  it('handles empty, single and self-looped graphs', () => {
    expect(layoutGraph([], []).size).to.equal(0);
    expect(layoutGraph([{ key: 'a' }], [{ source: 'a', target: 'a' }]).get('a')).to.have.keys(['x', 'y']);
  });
});
