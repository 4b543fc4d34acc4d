/**
 * Issue 20's poison goal over RabbitMQ: a poison message is dead-lettered after at most 5 deliveries while the
 * others' throughput drops at most 10 %. One node holds every shard and answers asks that go through the shard
 * queues (shortcut off, as asks from another node do) from `--concurrency` closed-loop askers; in alternating rounds
 * of `--seconds`, the same node is also sent `--poison-per-second` tells whose handler crashes every time (each one
 * redelivered to the limit, then dead-lettered). Prints, for the clean and the poisoned rounds, asks/s, their ratio
 * per round pair and its median, the most deliveries any poison message had, and the dead letters counted. Its own
 * `troupe-bench-<random>` topology, deleted afterwards.
 *
 *   npx tsx ops/bench/poison.ts [--url amqp://…] [--rounds 5] [--seconds 5] [--concurrency 32] [--poison-per-second 20]
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import amqp from 'amqplib';
import { AmqpTransport } from '../../transport/amqp/transport.js';
import { deleteTopology } from '../../transport/amqp/topology.js';
import { silentLogger } from '../kernel/logger.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '32' },
    'poison-per-second': { type: 'string', default: '20' },
  },
});
const rounds = Math.min(Math.max(Number(values.rounds), 1), 50);
const seconds = Math.min(Math.max(Number(values.seconds), 1), 120);
const concurrency = Math.min(Math.max(Number(values.concurrency), 1), 1_000);
const poisonPerSecond = Math.min(Math.max(Number(values['poison-per-second']), 1), 1_000);
const shardCount = 16;

const poisonRuns = new Map<string, number>();
const common = { url: values.url, shardCount, prefix: `troupe-bench-${randomBytes(4).toString('hex')}`, log: silentLogger(), shortcut: false, ownerRouting: false };
const holder = new AmqpTransport({ ...common, nodeId: `bench-poison-${process.pid}` });
await holder.start(async (address, message) => {
  if (address.startsWith('poison/')) {
    poisonRuns.set(address, (poisonRuns.get(address) ?? 0) + 1);
    throw new Error('poison');
  }
  return message;
});

async function round(poisoned: boolean): Promise<number> {
  const endAt = performance.now() + seconds * 1000;
  let answered = 0;
  let sequence = 0;
  const asker = async () => {
    while (performance.now() < endAt) {
      await holder.ask(`work/${sequence++ % 1000}`, { n: sequence }, { timeoutMs: 10_000 }).then(() => (answered += 1), () => undefined);
    }
  };
  let poisonSent = 0;
  const poison = poisoned
    ? setInterval(() => void holder.tell(`poison/${randomBytes(6).toString('hex')}`, { poisonSent: poisonSent++ }), 1000 / poisonPerSecond)
    : undefined;
  const began = performance.now();
  await Promise.all(Array.from({ length: concurrency }, asker));
  clearInterval(poison);
  return answered / ((performance.now() - began) / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
try {
  await round(false); // warm-up
  const clean: number[] = [];
  const poisoned: number[] = [];
  for (let r = 0; r < rounds; r += 1) {
    // Alternating order, so a drift of the machine's load falls on both sides alike.
    if (r % 2 === 0) { clean.push(await round(false)); poisoned.push(await round(true)); }
    else { poisoned.push(await round(true)); clean.push(await round(false)); }
  }
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const ratios = clean.map((c, i) => poisoned[i]! / c);
  const page = await holder.deadLetters.list(0);
  console.log(JSON.stringify({
    goal: 'poison', rounds, seconds, concurrency, poisonPerSecond,
    cleanAsksPerSecond: clean.map((x) => Math.round(x)), poisonedAsksPerSecond: poisoned.map((x) => Math.round(x)),
    ratioPerRound: ratios.map((x) => Math.round(x * 1000) / 1000), medianRatio: Math.round(median(ratios) * 1000) / 1000,
    throughputDropPercent: Math.round((1 - median(ratios)) * 1000) / 10,
    poisonMessages: poisonRuns.size, maxDeliveriesPerPoison: Math.max(...poisonRuns.values()), minDeliveriesPerPoison: Math.min(...poisonRuns.values()),
    deadLettered: page.total, strategy: page.strategy, loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100),
  }));
} finally {
  await holder.close();
  const connection = await amqp.connect(values.url);
  try { await deleteTopology(await connection.createChannel(), holder.topology); } finally { await connection.close(); }
}
