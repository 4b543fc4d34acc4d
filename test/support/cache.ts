import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Clock } from '../../ops/kernel/clock.js';
import type { Cache } from '../../storage/cache.js';
import { MemoryCache } from '../../storage/memory-cache.js';
import { RedisCache } from '../../storage/redis-cache.js';
import { engines, skipEngine } from './engines.js';

/**
 * Caches for tests. `withRedisCache` gives the real Redis under a unique key prefix and, on `drop()`, deletes
 * every key under that prefix. `cacheEngines` lists both so a suite can run once per implementation.
 */
export interface TestCache {
  readonly cache: Cache;
  readonly kind: 'memory' | 'redis';
  /** The key prefix on Redis; empty for memory. */
  readonly prefix: string;
  /** The Redis client name (`CLIENT LIST name=`); empty for memory. */
  readonly connectionName: string;
  drop(): Promise<void>;
}

export async function withMemoryCache(opts: { clock?: Clock; maxEntries?: number } = {}): Promise<TestCache> {
  const cache = new MemoryCache(opts);
  return { cache, kind: 'memory', prefix: '', connectionName: '', drop: () => cache.close() };
}

export async function withRedisCache(label = 'test'): Promise<TestCache> {
  const unique = `${label.replace(/[^a-z0-9]/gi, '_')}_${randomBytes(5).toString('hex')}`;
  const prefix = `__test_${unique}__:`;
  // The connection is named after the prefix so a test can find (and kill) exactly its own client.
  const cache = new RedisCache({ url: engines.redis, keyPrefix: prefix, connectionName: `test_${unique}` });
  return {
    cache,
    kind: 'redis',
    prefix,
    connectionName: `test_${unique}`,
    async drop() {
      await cache.close();
      await deleteKeysWithPrefix(prefix);
    },
  };
}

export async function deleteKeysWithPrefix(prefix: string): Promise<void> {
  const admin = new Redis(engines.redis, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await admin.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    admin.disconnect();
  }
}

export interface CacheEngine {
  readonly name: 'memory' | 'redis';
  readonly skip: boolean;
  open(label?: string): Promise<TestCache>;
}

export const cacheEngines: readonly CacheEngine[] = [
  { name: 'memory', skip: false, open: () => withMemoryCache() },
  { name: 'redis', skip: skipEngine.redis, open: (label) => withRedisCache(label) },
];
