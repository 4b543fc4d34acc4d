// A node for benchmarks on the shared engines: `ops/main.ts` with a Redis key prefix of its own (BENCH_CACHE_PREFIX),
// and on SIGTERM, after the node has closed, its RabbitMQ topology and its Redis keys are deleted, so a bench run
// leaves nothing behind on the machine's broker and cache (as test/support/node.ts does for tests). The node's
// database is the caller's to drop. Logs `troupe node ready` with its port, as `npm start` does.
//   BENCH_CACHE_PREFIX=bench-x: DATABASE_URL=… REDIS_URL=… AMQP_URL=… TROUPE_AMQP_PREFIX=… node --import tsx ops/bench/bench-node.ts
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { loadConfig } from '../config.js';
import { createLogger } from '../kernel/logger.js';
import { startNode } from '../node.js';
import { AmqpTransport, deleteTopology } from '../../transport/amqp/index.js';

const cachePrefix = process.env.BENCH_CACHE_PREFIX;
if (!process.env.TROUPE_MASTER_KEY || !process.env.TROUPE_ADMIN_TOKEN) throw new Error('bench-node needs TROUPE_MASTER_KEY and TROUPE_ADMIN_TOKEN');
if (process.env.REDIS_URL && !cachePrefix) throw new Error('bench-node on Redis needs BENCH_CACHE_PREFIX');
const config = loadConfig(process.env);
export const log = createLogger({ level: config.logLevel, nodeId: config.nodeId });
export const node = await startNode(config, { log, ...(cachePrefix ? { cachePrefix } : {}) });

async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  void (async () => {
    const transport = node.deps.transport;
    await node.close();
    if (transport instanceof AmqpTransport && config.amqpUrl) {
      const connection = await amqp.connect(config.amqpUrl);
      try { await deleteTopology(await connection.createChannel(), transport.topology); } finally { await connection.close(); }
    }
    if (config.redisUrl && cachePrefix) await deleteRedisKeys(config.redisUrl, cachePrefix);
  })().then(() => process.exit(0), (err: unknown) => {
    log.error({ err }, 'bench node cleanup failed');
    process.exit(1);
  });
});
