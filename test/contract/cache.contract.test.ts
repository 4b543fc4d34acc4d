/**
 * Invariant: every Cache implementation behaves alike. Values expire after their TTL and not before; setIfAbsent
 * lets exactly one of many concurrent callers win; increment counts atomically and its expiry runs from the
 * counter's creation; a closed cache or an unreachable Redis fails every call with CACHE_UNAVAILABLE in well under
 * a second instead of queueing. Runs on MemoryCache (with a driven clock) and on the real Redis.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Cache } from '../../storage/cache.js';
import { MemoryCache } from '../../storage/memory-cache.js';
import { RedisCache } from '../../storage/redis-cache.js';
import { engines, skipEngine } from '../support/engines.js';
import { withRedisCache, type TestCache } from '../support/cache.js';

interface CacheHarness {
  cache: Cache;
  /** Lets `ms` of cache time pass: moves the injected clock, or waits on a real server. */
  elapse(ms: number): Promise<void>;
  drop(): Promise<void>;
}

async function rejection(promise: Promise<unknown>): Promise<TroupeError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(TroupeError);
    return err as TroupeError;
  }
  expect.fail('expected the promise to reject');
}

let unique = 0;
const keyOf = (label: string) => `${label}:${++unique}`;

export function cacheContract(name: string, open: () => Promise<CacheHarness>): void {
  describe(`Cache contract: ${name}`, function () {
    let h: CacheHarness;
    before(async function () {
      h = await open();
    });
    after(async function () {
      await h?.drop();
    });

    it('answers undefined for a key never set', async function () {
      expect(await h.cache.get(keyOf('missing'))).to.equal(undefined);
    });

    it('sets, overwrites and deletes; non-ASCII keys and values round-trip', async function () {
      const key = keyOf('nonce-ünï-名前-🙂');
      await h.cache.set(key, 'first');
      await h.cache.set(key, 'zweiter Wert ✓');
      expect(await h.cache.get(key)).to.equal('zweiter Wert ✓');
      await h.cache.delete(key);
      expect(await h.cache.get(key)).to.equal(undefined);
      await h.cache.delete(key); // deleting an absent key is not an error
    });

    it('expires a value after its TTL and not before; no TTL means no expiry', async function () {
      const short = keyOf('ttl');
      const forever = keyOf('forever');
      await h.cache.set(short, 'v', 200);
      await h.cache.set(forever, 'v');
      await h.elapse(100);
      expect(await h.cache.get(short)).to.equal('v');
      await h.elapse(150);
      expect(await h.cache.get(short)).to.equal(undefined);
      expect(await h.cache.get(forever)).to.equal('v');
    });

    it('setIfAbsent sets once, keeps the first value, and sets again after expiry', async function () {
      const key = keyOf('nx');
      expect(await h.cache.setIfAbsent(key, 'a', 200)).to.equal(true);
      expect(await h.cache.setIfAbsent(key, 'b', 200)).to.equal(false);
      expect(await h.cache.get(key)).to.equal('a');
      await h.elapse(250);
      expect(await h.cache.setIfAbsent(key, 'c', 200)).to.equal(true);
      expect(await h.cache.get(key)).to.equal('c');
    });

    it('of many concurrent setIfAbsent calls exactly one wins, and its value is stored', async function () {
      const key = keyOf('nx-race');
      const results = await Promise.all(Array.from({ length: 25 }, (_, i) => h.cache.setIfAbsent(key, `writer-${i}`, 10_000)));
      const winners = results.flatMap((won, i) => (won ? [i] : []));
      expect(winners).to.have.length(1);
      expect(await h.cache.get(key)).to.equal(`writer-${winners[0]}`);
    });

    it('increments atomically under concurrency', async function () {
      const key = keyOf('counter');
      const values = await Promise.all(Array.from({ length: 50 }, () => h.cache.increment(key, 10_000)));
      expect([...values].sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(await h.cache.get(key)).to.equal('50');
    });

    it('an increment window runs from the counter creation, is not extended, and restarts after expiry', async function () {
      const key = keyOf('window');
      expect(await h.cache.increment(key, 300)).to.equal(1);
      await h.elapse(150);
      expect(await h.cache.increment(key, 300)).to.equal(2);
      await h.elapse(200); // 350 ms after creation: the window is over even though the last hit was 200 ms ago
      expect(await h.cache.increment(key, 300)).to.equal(1);
    });

    it('refuses to increment a value that is not an integer, leaving it as it was', async function () {
      const key = keyOf('text');
      await h.cache.set(key, 'not a number');
      expect((await rejection(h.cache.increment(key, 1000))).code).to.equal('INTERNAL');
      expect(await h.cache.get(key)).to.equal('not a number');
    });

    it('refuses a TTL that is not positive', async function () {
      for (const ttl of [0, -5, Number.NaN]) {
        expect((await rejection(h.cache.setIfAbsent(keyOf('bad-ttl'), 'v', ttl))).code).to.equal('INTERNAL');
      }
    });

    it('pings while open', async function () {
      expect(await h.cache.ping()).to.equal(true);
    });
  });
}

function fakeClock() {
  let now = 1_700_000_000_000;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

cacheContract('memory', async () => {
  const clock = fakeClock();
  const cache = new MemoryCache({ clock });
  return { cache, elapse: async (ms) => clock.advance(ms), drop: () => cache.close() };
});

if (!skipEngine.redis) {
  cacheContract('redis', async () => {
    const test: TestCache = await withRedisCache('contract');
    // Redis keeps its own time, so the test has to let it pass.
    return { cache: test.cache, elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)), drop: () => test.drop() };
  });
}

describe('Cache when closed or unreachable', function () {
  it('MemoryCache: calls after close fail with CACHE_UNAVAILABLE and ping is false', async function () {
    const cache = new MemoryCache();
    await cache.close();
    expect((await rejection(cache.get('k'))).code).to.equal('CACHE_UNAVAILABLE');
    expect(await cache.ping()).to.equal(false);
  });

  it('RedisCache on a closed port: every call fails with CACHE_UNAVAILABLE in under a second', async function () {
    const cache = new RedisCache({ url: 'redis://127.0.0.1:1', keyPrefix: 'unreachable:' });
    try {
      const calls: Array<() => Promise<unknown>> = [
        () => cache.get('k'),
        () => cache.set('k', 'v', 1000),
        () => cache.setIfAbsent('k', 'v', 1000),
        () => cache.increment('k', 1000),
        () => cache.delete('k'),
      ];
      for (const call of calls) {
        const started = Date.now();
        expect((await rejection(call())).code).to.equal('CACHE_UNAVAILABLE');
        expect(Date.now() - started).to.be.below(1_000);
      }
      const started = Date.now();
      expect(await cache.ping()).to.equal(false);
      expect(Date.now() - started).to.be.below(1_000);
    } finally {
      await cache.close();
    }
  });

  (skipEngine.redis ? it.skip : it)('RedisCache comes back by itself after the server drops its connection', async function () {
    const test = await withRedisCache('reconnect');
    const admin = new Redis(engines.redis, { maxRetriesPerRequest: 1 });
    try {
      await test.cache.set('k', 'before');
      // Find exactly our client by its connection name (other suites share this Redis), and have the server kill it.
      const clients = (await admin.call('CLIENT', 'LIST')) as string;
      const ours = clients.split('\n').find((line) => line.includes(` name=${test.connectionName} `));
      const id = ours?.match(/^id=(\d+)/)?.[1];
      expect(id, 'our client in CLIENT LIST').to.be.a('string');
      expect(await admin.call('CLIENT', 'KILL', 'ID', id!)).to.equal(1);
      const deadline = Date.now() + 5_000;
      let value: string | undefined;
      while (Date.now() < deadline) {
        try {
          value = await test.cache.get('k');
          break;
        } catch (err) {
          expect((err as TroupeError).code).to.equal('CACHE_UNAVAILABLE');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      expect(value).to.equal('before');
    } finally {
      admin.disconnect();
      await test.drop();
    }
  });

  (skipEngine.redis ? it.skip : it)('RedisCache key prefixes isolate two caches on one server', async function () {
    const a = await withRedisCache('iso-a');
    const b = await withRedisCache('iso-b');
    try {
      await a.cache.set('shared-name', 'from a');
      expect(await b.cache.get('shared-name')).to.equal(undefined);
      expect(await b.cache.setIfAbsent('shared-name', 'from b', 1000)).to.equal(true);
      expect(await a.cache.get('shared-name')).to.equal('from a');
    } finally {
      await a.drop();
      await b.drop();
    }
  });
});
