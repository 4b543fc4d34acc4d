// Invariant: a node's copy of an org's pauses never lets an offer be judged by pauses older than the change announced
// before it: deliveries wait, in order, behind the first read and behind each re-read a change asks for (one more read
// when a change arrives during a read); once read, deliveries run at once until the copy is older than its bound;
// a read that fails hands `undefined` (the caller then nudges a poll) and is tried again on next use.
import { expect } from 'chai';
import { OfferPauses, type OrgPauses } from '../../../actors/services/fleet/offer-pauses.js';

const ORG = 'org-1';

class Reads {
  readonly pending: Array<{ resolve: (p: OrgPauses) => void; reject: (e: Error) => void }> = [];
  count = 0;
  readonly load = (): Promise<OrgPauses> => {
    this.count++;
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  };
  async answer(projects: string[], workers: string[] = []): Promise<void> {
    this.pending.shift()!.resolve({ projects: new Set(projects), workers: new Set(workers) });
    await new Promise((r) => setImmediate(r));
  }
  async fail(): Promise<void> {
    this.pending.shift()!.reject(new Error('db down'));
    await new Promise((r) => setImmediate(r));
  }
}

describe('offer pauses (a node\'s copy of an org\'s pauses)', () => {
  let now = 0;
  const errors: unknown[] = [];
  const make = (reads: Reads) => new OfferPauses(reads.load, (_org, err) => errors.push(err), () => now, 1_000);
  beforeEach(() => { now = 0; errors.length = 0; });

  it('holds deliveries behind the first read, in order, then delivers at once', async () => {
    const reads = new Reads();
    const pauses = make(reads);
    const seen: string[] = [];
    pauses.run(ORG, (p) => seen.push(`a:${[...p!.projects]}`));
    pauses.run(ORG, (p) => seen.push(`b:${[...p!.projects]}`));
    expect(seen).to.deep.equal([]);
    await reads.answer(['p1']);
    expect(seen).to.deep.equal(['a:p1', 'b:p1']);
    pauses.run(ORG, () => seen.push('c'));
    expect(seen.at(-1), 'synchronous once known').to.equal('c');
    expect(reads.count).to.equal(1);
  });

  it('a change makes later deliveries wait for the pauses as they are now; a change during a read reads again', async () => {
    const reads = new Reads();
    const pauses = make(reads);
    pauses.prefetch(ORG);
    await reads.answer([]);
    const seen: string[] = [];
    pauses.changed(ORG);
    pauses.run(ORG, (p) => seen.push(`after pause:${[...p!.projects]}`));
    pauses.changed(ORG); // announced while the re-read is in flight
    await reads.answer([]); // the read that may have started before the second change
    expect(seen).to.deep.equal([]);
    await reads.answer(['p1']);
    expect(seen).to.deep.equal(['after pause:p1']);
    expect(reads.count).to.equal(3);
  });

  it('reads again once the copy is older than its bound, and hands undefined when a read fails', async () => {
    const reads = new Reads();
    const pauses = make(reads);
    const seen: Array<OrgPauses | undefined> = [];
    pauses.run(ORG, (p) => seen.push(p));
    await reads.fail();
    expect(seen).to.deep.equal([undefined]);
    expect(errors).to.have.length(1);
    pauses.run(ORG, (p) => seen.push(p));
    await reads.answer(['p2']);
    expect([...seen[1]!.projects]).to.deep.equal(['p2']);
    now = 1_001;
    pauses.run(ORG, (p) => seen.push(p));
    expect(seen).to.have.length(2);
    await reads.answer(['p3']);
    expect([...seen[2]!.projects]).to.deep.equal(['p3']);
  });

  it('forgets an org whose workers all left, and a change for an org it never read reads nothing', async () => {
    const reads = new Reads();
    const pauses = make(reads);
    pauses.changed('other');
    expect(reads.count).to.equal(0);
    pauses.prefetch(ORG);
    await reads.answer([]);
    pauses.forget(ORG);
    pauses.run(ORG, () => undefined);
    expect(reads.count, 'read afresh after being forgotten').to.equal(2);
  });
});
