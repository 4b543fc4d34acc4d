/**
 * Invariant: MemoryCache cannot grow without bound. However many distinct keys arrive, it holds at most
 * `maxEntries`; when full it drops an expired entry before a live one, and otherwise the least recently used, so
 * a key that keeps being read survives a flood of one-off keys.
 */
import { expect } from 'chai';
import { MemoryCache } from '../../../storage/memory-cache.js';

function clockAt(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

describe('MemoryCache bounds', function () {
  it('never holds more than maxEntries under a flood of distinct keys', async function () {
    const cache = new MemoryCache({ maxEntries: 100, clock: clockAt() });
    for (let i = 0; i < 10_000; i++) await cache.setIfAbsent(`nonce:${i}`, '1', 60_000);
    expect(cache.size).to.equal(100);
    expect(await cache.get('nonce:9999')).to.equal('1');
    expect(await cache.get('nonce:0')).to.equal(undefined);
  });

  it('evicts the least recently used, so a key in use survives', async function () {
    const cache = new MemoryCache({ maxEntries: 3, clock: clockAt() });
    await cache.set('hot', 'h');
    await cache.set('b', 'b');
    await cache.set('c', 'c');
    expect(await cache.get('hot')).to.equal('h'); // now most recently used
    await cache.set('d', 'd'); // evicts b, the least recently used
    expect(await cache.get('b')).to.equal(undefined);
    expect(await cache.get('hot')).to.equal('h');
    expect(await cache.get('c')).to.equal('c');
    expect(await cache.get('d')).to.equal('d');
  });

  it('drops an expired entry before any live one when full', async function () {
    const clock = clockAt();
    const cache = new MemoryCache({ maxEntries: 3, clock });
    await cache.set('old-but-forever', 'a');
    await cache.set('short', 'b', 100);
    await cache.set('live', 'c', 10_000);
    clock.advance(200);
    await cache.set('new', 'd');
    expect(cache.size).to.equal(3);
    expect(await cache.get('old-but-forever')).to.equal('a');
    expect(await cache.get('live')).to.equal('c');
    expect(await cache.get('new')).to.equal('d');
  });

  it('an expired key counts as absent for setIfAbsent and increment', async function () {
    const clock = clockAt();
    const cache = new MemoryCache({ clock });
    await cache.setIfAbsent('k', 'first', 100);
    await cache.increment('n', 100);
    clock.advance(100); // expiry is inclusive: at exactly ttl the entry is gone
    expect(await cache.setIfAbsent('k', 'second', 100)).to.equal(true);
    expect(await cache.increment('n', 100)).to.equal(1);
  });

  it('refuses a non-positive maxEntries', function () {
    expect(() => new MemoryCache({ maxEntries: 0 })).to.throw(/maxEntries/);
  });
});
