// Invariant: a memo hit never outlives a revocation this node heard of (also one that arrived while the lookup
// was in flight), never outlives its expiry, and the memo stays within its size, evicting the least recently used
// entry (recency refreshed at most once a second).
import { expect } from 'chai';
import { RevocableMemo } from '../../../actors/services/identity/memo.js';

describe('revocable memo', () => {
  it('answers until expiry, then forgets', () => {
    const memo = new RevocableMemo<string>(10, 10);
    memo.set('k', 'v', 1_000, ['t'], memo.begin());
    expect(memo.get('k', 999)).to.equal('v');
    expect(memo.get('k', 1_000)).to.equal(undefined);
  });

  it('drops an entry when one of its tags is revoked, and only those entries', () => {
    const memo = new RevocableMemo<string>(10, 10);
    memo.set('a', 'A', 10_000, ['org:1', 'key:a'], memo.begin());
    memo.set('b', 'B', 10_000, ['org:1', 'key:b'], memo.begin());
    memo.revoke(['key:a']);
    expect(memo.get('a', 0)).to.equal(undefined);
    expect(memo.get('b', 0)).to.equal('B');
  });

  it('refuses a lookup that started before a revocation of its tag', () => {
    const memo = new RevocableMemo<string>(10, 10);
    const started = memo.begin();
    memo.revoke(['key:a']); // arrives while the lookup is in flight
    memo.set('a', 'stale', 10_000, ['key:a'], started);
    expect(memo.get('a', 0)).to.equal(undefined);
  });

  it('keeps an entry revoked after it was stored out, even when other revocations came first', () => {
    const memo = new RevocableMemo<string>(10, 10);
    memo.revoke(['other']);
    memo.set('a', 'A', 10_000, ['key:a'], memo.begin());
    expect(memo.get('a', 0)).to.equal('A');
    memo.revoke(['key:a']);
    expect(memo.get('a', 0)).to.equal(undefined);
  });

  it('evicts the least recently used entry when full', () => {
    const memo = new RevocableMemo<string>(2, 10);
    memo.set('a', 'A', 100_000, [], memo.begin());
    memo.set('b', 'B', 100_000, [], memo.begin());
    expect(memo.get('a', 5_000)).to.equal('A'); // a becomes the most recent
    memo.set('c', 'C', 100_000, [], memo.begin());
    expect(memo.get('b', 5_000)).to.equal(undefined);
    expect(memo.get('a', 5_000)).to.equal('A');
    expect(memo.get('c', 5_000)).to.equal('C');
    expect(memo.size).to.equal(2);
  });

  it('spares a used entry once per eviction pass, and at most 32 of them for one insert', () => {
    const memo = new RevocableMemo<number>(40, 10);
    for (let i = 0; i < 40; i++) memo.set(`k${i}`, i, 100_000, [], memo.begin());
    for (let i = 0; i < 40; i++) memo.get(`k${i}`, 5_000);
    memo.set('new', 40, 100_000, [], memo.begin());
    // k0..k31 were spared (moved to the recent end, unmarked); k32, though used, was evicted.
    expect(memo.size).to.equal(40);
    expect(memo.get('k32', 5_000)).to.equal(undefined);
    expect(memo.get('k31', 5_000)).to.equal(31);
    expect(memo.get('new', 5_000)).to.equal(40);
    // Spared entries were unmarked; k33..k39 are still marked and k0 is the oldest unmarked one (k31 was hit again).
    memo.set('newer', 41, 100_000, [], memo.begin());
    expect(memo.get('k33', 5_000)).to.equal(33);
    expect(memo.get('k0', 5_000)).to.equal(undefined);
  });
});
