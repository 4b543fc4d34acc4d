/** Invariant: a tally counts per key, forgets a key at zero, and never goes below zero. */
import { expect } from 'chai';
import { Tally } from '../../../transport/tally.js';

describe('Tally', () => {
  it('counts up and down per key, and forgets a key at zero', () => {
    const tally = new Tally<string>();
    tally.add('a');
    tally.add('a');
    tally.add('b');
    expect([tally.get('a'), tally.get('b'), tally.has('c')]).to.deep.equal([2, 1, false]);
    expect(tally.remove('a')).to.equal(1);
    expect(tally.remove('a')).to.equal(0);
    expect(tally.has('a')).to.equal(false);
  });

  it('answers zero for a key it never counted, and stays at zero', () => {
    const tally = new Tally<number>();
    expect(tally.remove(7)).to.equal(0);
    expect(tally.has(7)).to.equal(false);
    tally.add(7);
    expect(tally.get(7)).to.equal(1);
  });
});
