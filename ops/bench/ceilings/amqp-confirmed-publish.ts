// Ceiling for G4 (PERFORMANCE.md): confirmed publishes on one connection to a quorum queue, `--window` confirms in
// flight, bodies of `--bytes` (the size of the broker path's ask envelope), drained by a consumer in another process
// that acks each message (manual ack, as a shard consumer does). Driven by ops/bench/cluster.ts over IPC:
//   --role drain      consumes `--queue` until told to stop; on {collect} answers the publish → delivery latency
//                     {count, p50, p99} of what it received since the last collect
//   --role publisher  on {run: {seconds, perSecond?}} publishes for that long (flat out, or paced) and answers
//                     {rate, p50, p99} (confirmed/s; publish → confirm latency in ms); with {spread: true} it
//                     publishes round-robin over the `--spread` extra queues instead of `--queue`
// The publisher declares the queue (quorum, durable) and the drain consumes it; cluster.ts deletes it afterwards.
import { parseArgs } from 'node:util';
import amqp from 'amqplib';

const { values } = parseArgs({
  options: {
    role: { type: 'string' },
    url: { type: 'string', default: 'amqp://guest:guest@127.0.0.1:5672' },
    queue: { type: 'string' },
    bytes: { type: 'string', default: '400' },
    window: { type: 'string', default: '1000' },
    // Extra quorum queues `<queue>.q<i>` a paced run may spread over, as the broker path spreads asks over shards.
    spread: { type: 'string', default: '0' },
  },
});
const queue = values.queue;
if (!queue || !process.send) throw new Error('run by ops/bench/cluster.ts: --queue and an IPC channel are required');
const send = (message: unknown) => process.send!(message);
const connection = await amqp.connect(values.url, { noDelay: true });
const channel = await connection.createConfirmChannel();
const spreadQueues = Array.from({ length: Number(values.spread) }, (_, i) => `${queue}.q${i}`);
for (const name of [queue, ...spreadQueues]) await channel.assertQueue(name, { durable: true, arguments: { 'x-queue-type': 'quorum' } });

async function stop(): Promise<void> {
  await connection.close().catch(() => undefined);
  process.exit(0);
}

if (values.role === 'drain') {
  // Publish → delivery latency, from the publisher's monotonic timestamp (CLOCK_MONOTONIC is machine-wide): what
  // the broker alone costs before any consumer could start work, the floor under an ask's round trip.
  let deliveryMs: number[] = [];
  await channel.prefetch(1_000);
  for (const name of [queue, ...spreadQueues]) {
    await channel.consume(name, (msg) => {
      if (!msg) return;
      const sentAt = msg.properties.headers?.['x-sent-ns'];
      if (typeof sentAt === 'string') deliveryMs.push(Number(process.hrtime.bigint() - BigInt(sentAt)) / 1e6);
      channel.ack(msg);
    }, { noAck: false });
  }
  process.on('message', (m: { stop?: true; collect?: true }) => {
    if (m.stop) void stop();
    else if (m.collect) {
      const sorted = Float64Array.from(deliveryMs).sort();
      deliveryMs = [];
      const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
      send({ count: sorted.length, p50: at(0.5), p99: at(0.99) });
    }
  });
  send({ ready: true });
} else if (values.role === 'publisher') {
  const window = Number(values.window);
  const body = Buffer.alloc(Number(values.bytes), 'x');
  /** Flat out with `window` in flight, or paced at `perSecond` (1 ms ticks): confirmed/s and publish→confirm latency. */
  const run = (seconds: number, perSecond?: number, spread = false) =>
    new Promise<{ rate: number; p50: number; p99: number }>((resolve) => {
      let confirmed = 0;
      let inFlight = 0;
      let sent = 0;
      let ticking = perSecond !== undefined;
      const latencies: number[] = [];
      const began = performance.now();
      const endAt = began + seconds * 1000;
      const finish = () => {
        const sorted = Float64Array.from(latencies).sort();
        const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
        resolve({ rate: confirmed / ((performance.now() - began) / 1000), p50: at(0.5), p99: at(0.99) });
      };
      const publishOne = () => {
        inFlight += 1;
        sent += 1;
        const startedAt = performance.now();
        const headers = { 'x-sent-ns': String(process.hrtime.bigint()) };
        const target = spread && spreadQueues.length > 0 ? spreadQueues[sent % spreadQueues.length]! : queue;
        channel.publish('', target, body, { persistent: true, contentType: 'application/json', headers }, () => {
          inFlight -= 1;
          confirmed += 1;
          latencies.push(performance.now() - startedAt);
          if (perSecond === undefined && performance.now() < endAt) publishOne();
          else if (inFlight === 0 && !ticking) finish();
        });
      };
      if (perSecond === undefined) {
        for (let i = 0; i < window; i += 1) publishOne();
        return;
      }
      const tick = () => {
        const now = performance.now();
        if (now >= endAt) {
          ticking = false;
          if (inFlight === 0) finish();
          return;
        }
        const due = Math.floor(((now - began) / 1000) * perSecond);
        while (sent < due) publishOne();
        setTimeout(tick, 1);
      };
      tick();
    });
  process.on('message', (m: { run?: { seconds: number; perSecond?: number; spread?: boolean }; stop?: true }) => {
    if (m.stop) void stop();
    else if (m.run) void run(m.run.seconds, m.run.perSecond, m.run.spread).then(send);
  });
  send({ ready: true });
} else {
  throw new Error(`unknown --role ${values.role}`);
}
