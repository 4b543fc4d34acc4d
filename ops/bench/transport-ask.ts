/**
 * Ask round trips over RabbitMQ with pipelining: one node asks its own shards through the broker, keeping
 * `--concurrency` asks in flight for `--seconds`, and prints asks/s and latency percentiles. It declares its own
 * `troupe-bench-<random>` topology and deletes it afterwards.
 *
 *   npx tsx ops/bench/transport-ask.ts [--url amqp://guest:guest@127.0.0.1:5672] [--seconds 5] [--concurrency 256] [--shards 16]
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import amqp from 'amqplib';
import { AmqpTransport } from '../../transport/amqp/transport.js';
import { deleteTopology } from '../../transport/amqp/topology.js';
import { silentLogger } from '../kernel/logger.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672' },
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '256' },
    shards: { type: 'string', default: '16' },
  },
});
const seconds = Math.min(Math.max(Number(values.seconds), 1), 120);
const concurrency = Math.min(Math.max(Number(values.concurrency), 1), 10_000);
const shardCount = Math.min(Math.max(Number(values.shards), 1), 1024);

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

const transport = new AmqpTransport({
  url: values.url,
  nodeId: `bench-${process.pid}`,
  shardCount,
  prefix: `troupe-bench-${randomBytes(4).toString('hex')}`,
  log: silentLogger(),
});
await transport.start(async (address, message) => ({ address, message }));

const latencies: number[] = [];
let failures = 0;
const endAt = performance.now() + seconds * 1000;
let sequence = 0;

async function worker(): Promise<void> {
  while (performance.now() < endAt) {
    const n = sequence++;
    const startedAt = performance.now();
    try {
      await transport.ask(`bench/${n % 1000}`, { n }, { timeoutMs: 10_000 });
      latencies.push(performance.now() - startedAt);
    } catch {
      failures += 1;
    }
  }
}

const began = performance.now();
await Promise.all(Array.from({ length: concurrency }, worker));
const elapsed = (performance.now() - began) / 1000;

await transport.close();
const connection = await amqp.connect(values.url);
await deleteTopology(await connection.createChannel(), transport.topology);
await connection.close();

const sorted = Float64Array.from(latencies).sort();
console.log(
  JSON.stringify({
    asks: latencies.length,
    failures,
    seconds: Number(elapsed.toFixed(2)),
    concurrency,
    shards: shardCount,
    asksPerSecond: Math.round(latencies.length / elapsed),
    p50ms: Number(percentile(sorted, 50).toFixed(2)),
    p99ms: Number(percentile(sorted, 99).toFixed(2)),
  }),
);
