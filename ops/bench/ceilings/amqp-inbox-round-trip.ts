// Floor for G4's paced p99 (PERFORMANCE.md): the round trip that owner-routed asks make (decision 0019), in plain
// amqplib with no Troupe code. Driven by ops/bench/cluster.ts over IPC, on the same broker and cores as the nodes:
//   --role answerer  declares `--queue` (exclusive, not durable) and answers every message at once with one reply,
//                    through direct reply-to, naming the asks it carried
//   --role asker     on {run: {seconds, perSecond}} asks at that rate on 1 ms ticks, each tick's asks in one message
//                    of `--bytes` per ask, and answers {rate, p50, p99} (ask → answer, ms)
// What the nodes add on top of this is the node code's share of the tail.
import { parseArgs } from 'node:util';
import amqp from 'amqplib';

const { values } = parseArgs({
  options: {
    role: { type: 'string' },
    url: { type: 'string', default: 'amqp://guest:guest@127.0.0.1:5672' },
    queue: { type: 'string' },
    bytes: { type: 'string', default: '340' },
  },
});
const queue = values.queue;
if (!queue || !process.send) throw new Error('run by ops/bench/cluster.ts: --queue and an IPC channel are required');
const send = (message: unknown) => process.send!(message);
const connection = await amqp.connect(values.url, { noDelay: true });
const channel = await connection.createChannel();

async function stop(): Promise<void> {
  await connection.close().catch(() => undefined);
  process.exit(0);
}

if (values.role === 'answerer') {
  await channel.assertQueue(queue, { durable: false, exclusive: true, autoDelete: true });
  await channel.consume(queue, (msg) => {
    if (!msg) return;
    const { ids } = JSON.parse(msg.content.toString()) as { ids: number[] };
    channel.publish('', msg.properties.replyTo as string, Buffer.from(JSON.stringify(ids)));
  }, { noAck: true });
  process.on('message', (m: { stop?: true }) => { if (m.stop) void stop(); });
  send({ ready: true });
} else if (values.role === 'asker') {
  const padding = 'x'.repeat(Number(values.bytes));
  const startedAt = new Map<number, number>();
  let latencies: number[] = [];
  await channel.consume('amq.rabbitmq.reply-to', (msg) => {
    if (!msg) return;
    const now = performance.now();
    for (const id of JSON.parse(msg.content.toString()) as number[]) {
      const at = startedAt.get(id);
      if (at === undefined) continue;
      startedAt.delete(id);
      latencies.push(now - at);
    }
  }, { noAck: true });
  let next = 0;
  const run = async (seconds: number, perSecond: number) => {
    latencies = [];
    const began = performance.now();
    let sent = 0;
    while (performance.now() - began < seconds * 1000) {
      const due = Math.floor(((performance.now() - began) / 1000) * perSecond);
      const ids: number[] = [];
      for (; sent < due; sent += 1) {
        const id = next++;
        startedAt.set(id, performance.now());
        ids.push(id);
      }
      if (ids.length > 0) channel.publish('', queue, Buffer.from(JSON.stringify({ ids, padding: padding.repeat(ids.length) })), { replyTo: 'amq.rabbitmq.reply-to' });
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const until = performance.now() + 2_000;
    while (startedAt.size > 0 && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
    const sorted = Float64Array.from(latencies).sort();
    const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
    return { rate: sorted.length / seconds, p50: at(0.5), p99: at(0.99) };
  };
  process.on('message', (m: { run?: { seconds: number; perSecond: number }; stop?: true }) => {
    if (m.stop) void stop();
    else if (m.run) void run(m.run.seconds, m.run.perSecond).then(send);
  });
  send({ ready: true });
} else {
  throw new Error(`unknown --role ${values.role}`);
}
