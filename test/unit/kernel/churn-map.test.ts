/**
 * Invariant: ChurnMap and ChurnSet behave as Map and Set do (contents, sizes and insertion order), however many times
 * they have renewed their table; an iteration that deletes as it goes sees each deletion.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { ChurnMap, ChurnSet } from '../../../ops/kernel/churn-map.js';

type Op = { kind: 'set'; key: number; value: number } | { kind: 'delete'; key: number } | { kind: 'clear' };

/** Small enough that every run renews its table many times (at 1,024 a run of a few thousand operations might not). */
const RENEW_EVERY = 4;

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 60, arbitrary: fc.record({ kind: fc.constant('set' as const), key: fc.nat(20), value: fc.integer() }) },
  { weight: 40, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.nat(20) }) },
  // Rare: a clear starts the count towards the next renewal again.
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
);

describe('ChurnMap and ChurnSet', () => {
  it('hold what a Map and a Set hold, in the same order, across renewals', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 300, maxLength: 1_500 }), (ops) => {
        const map = new ChurnMap<number, number>(RENEW_EVERY);
        const set = new ChurnSet<number>(RENEW_EVERY);
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.kind === 'set') {
            map.set(o.key, o.value);
            set.add(o.key);
            model.set(o.key, o.value);
          } else if (o.kind === 'delete') {
            expect(map.delete(o.key)).to.equal(model.has(o.key));
            expect(set.delete(o.key)).to.equal(model.has(o.key));
            model.delete(o.key);
          } else {
            map.clear();
            set.clear();
            model.clear();
          }
        }
        expect([...map]).to.deep.equal([...model]);
        expect([...map.keys()]).to.deep.equal([...model.keys()]);
        expect([...map.values()]).to.deep.equal([...model.values()]);
        expect([...set]).to.deep.equal([...model.keys()]);
        expect([map.size, set.size]).to.deep.equal([model.size, model.size]);
        for (const key of [0, 1, 10, 20]) {
          expect(map.get(key)).to.equal(model.get(key));
          expect([map.has(key), set.has(key)]).to.deep.equal([model.has(key), model.has(key)]);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('lets an iteration delete as it goes, after renewals', () => {
    const map = new ChurnMap<number, string>(RENEW_EVERY);
    for (let i = 0; i < 1_024; i++) map.set(i, `v${i}`);
    for (let i = 0; i < 1_000; i++) map.delete(i);
    const seen: number[] = [];
    for (const [key] of map) {
      seen.push(key);
      map.delete(key + 1);
    }
    expect(seen).to.deep.equal(Array.from({ length: 12 }, (_, i) => 1_000 + 2 * i));
    expect(map.size).to.equal(12);
  });
});
