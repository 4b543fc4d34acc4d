import type { Knex } from 'knex';
import type { PGlite } from '@electric-sql/pglite';
import type { Registry } from 'prom-client';
import type { Config } from './kernel/config.js';
import type { Logger } from './kernel/logger.js';
import { driverWarnings } from './kernel/flood-log.js';
import { createDb } from '../storage/db.js';
import { migrate } from '../storage/migrations/runner.js';
import { MemoryCache } from '../storage/memory-cache.js';
import { RedisCache } from '../storage/redis-cache.js';
import type { Cache } from '../storage/cache.js';
import { LocalTransport } from '../transport/local.js';
import { AmqpTransport } from '../transport/amqp/index.js';
import { Cluster } from '../transport/cluster/index.js';
import { managementUrlFor, vhostOf } from '../transport/amqp/management-api.js';
import type { Transport } from '../transport/port.js';
import { watchDeadLetters } from '../transport/dead-letter-metrics.js';
import type { Closers, StartPhases } from './node-lifecycle.js';

/**
 * The engines a node stands on, each embedded or real as the config says: PGlite or Postgres (migrated on open), an
 * in-memory cache or Redis, an in-process transport or RabbitMQ, and on RabbitMQ the cluster's membership.
 */

/** Where a node keeps its data and names its queues, for tests that open several side by side. */
export interface EngineOptions {
  /** PGlite in memory instead of under the data dir (tests). */
  readonly inMemoryDb?: boolean;
  /** An already-open PGlite (tests clone a migrated template instead of running initdb for every node). */
  readonly pglite?: PGlite;
  /** Postgres schema to work in (tests isolate themselves). */
  readonly searchPath?: string;
  /** Key prefix for Redis (tests isolate themselves). */
  readonly cachePrefix?: string;
  /** Exchange and queue name prefix for RabbitMQ (tests isolate themselves). */
  readonly transportPrefix?: string;
}

export interface Engines {
  readonly db: Knex;
  readonly cache: Cache;
  /** The cache's Redis connection when the node has one. */
  readonly redis?: RedisCache['client'];
  /** Not started yet: it starts delivering once the actors it feeds are registered. */
  readonly transport: Transport;
}

/**
 * Storage, then the cache, then the transport (not started). `onShardsLost` is told when RabbitMQ gives this node's
 * shards to standbys (decision 0010), so their actors stop here.
 */
export async function openEngines(
  config: Config, options: EngineOptions, log: Logger, metrics: Registry, start: { closers: Closers; phases: StartPhases },
  onShardsLost: (shards: readonly number[]) => void,
): Promise<Engines> {
  const db = await openStorage(config, options, log);
  start.closers.push(() => db.destroy());
  start.phases.done('storage');
  const { cache, redis } = await openCache(config, options, log);
  start.closers.push(() => cache.close());
  start.phases.done('cache');
  const transport = await openTransport(config, options, log, metrics, onShardsLost);
  watchDeadLetters(metrics, transport.deadLetters);
  return { db, cache, redis, transport };
}

async function openStorage(config: Config, options: EngineOptions, log: Logger): Promise<Knex> {
  const db = await createDb({
    ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir }),
    ...(options.inMemoryDb ? { inMemory: true } : {}),
    ...(options.pglite ? { pglite: options.pglite } : {}),
    ...(options.searchPath ?? config.databaseSchema ? { searchPath: options.searchPath ?? config.databaseSchema } : {}),
    queryTimeoutMs: config.queryTimeoutMs,
    log: { warn: driverWarnings(log), error: (m) => log.error(m), debug: (m) => log.debug(m) },
  });
  const applied = await migrate(db);
  if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied');
  return db;
}

/*
 * The Redis and RabbitMQ clients stay static imports although an embedded node never uses them: imported lazily,
 * the test processes (which load TypeScript as CommonJS through tsx) got a second copy of every module behind the
 * dynamic import, and a TroupeError of one copy was not an instance of the other's (decision 0051).
 */
async function openCache(config: Config, options: EngineOptions, log: Logger): Promise<{ cache: Cache; redis?: RedisCache['client'] }> {
  if (!config.redisUrl) return { cache: new MemoryCache() };
  const cacheLog = log.child({ component: 'cache' });
  const cache = new RedisCache({
    url: config.redisUrl, keyPrefix: options.cachePrefix ?? config.cachePrefix, connectionName: `troupe-${config.nodeId}`,
    onUnreachable: (err) => cacheLog.warn({ err: err.message }, 'redis is unreachable: rate limits and nonce checks fall back as the spec says until it is back'),
    onReachable: () => cacheLog.info('redis connection is ready again'),
  });
  return { cache, redis: cache.client };
}

async function openTransport(
  config: Config, options: EngineOptions, log: Logger, metrics: Registry, onShardsLost: (shards: readonly number[]) => void,
): Promise<Transport> {
  if (!config.amqpUrl) return new LocalTransport({ nodeId: config.nodeId, log });
  return new AmqpTransport({
    url: config.amqpUrl, nodeId: config.nodeId, shardCount: config.shardCount, log, metrics, onShardsLost,
    prefix: options.transportPrefix ?? config.amqpPrefix,
    // Queues an older Troupe declared get their dead-letter policies through it (decision 0048).
    management: { url: config.amqpManagementUrl ?? managementUrlFor(config.amqpUrl), vhost: vhostOf(config.amqpUrl) },
  });
}

/** Cluster membership and shard placement over the same broker (decision 0010). */
export async function openCluster(
  config: Config, transport: AmqpTransport, log: Logger, metrics: Registry, passivateShards: (shards: readonly number[]) => Promise<void>,
): Promise<Cluster> {
  const amqpUrl = config.amqpUrl!;
  return new Cluster({
    transport, amqpUrl, prefix: transport.prefix, nodeId: config.nodeId, shardCount: config.shardCount, metrics,
    log: log.child({ component: 'cluster' }),
    passivateShard: (shard) => passivateShards([shard]),
    management: { url: config.amqpManagementUrl ?? managementUrlFor(amqpUrl), vhost: vhostOf(amqpUrl) },
  });
}
