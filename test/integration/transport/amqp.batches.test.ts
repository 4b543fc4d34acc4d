/**
 * Invariant: asks that leave in one turn for one shard share a broker message, and their replies share messages
 * back, without changing what each asker sees: every ask is answered, per-address order holds, a crashing ask is
 * retried alone to the delivery limit and dead-lettered alone while its batch-mates are answered, and a batch that
 * is not a list of ask envelopes goes to the dead-letter queue without reaching a handler.
 */
import { expect } from 'chai';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { Registry } from 'prom-client';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { shardOf } from '../../../transport/shards.js';
import { ASK_BATCH_TYPE } from '../../../transport/amqp/ask-batch.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { engines, skipEngine } from '../../support/engines.js';
import { eventually, startAmqpTransport, type StartedTransport } from '../../support/transport.js';

const SHARDS = 4;
const DELIVERY_LIMIT = 2;

/** `count` addresses named `<prefix>/<i>` that all live on `shard`. */
function addressesOn(shard: number, prefix: string, count: number): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count; i += 1) if (shardOf(`${prefix}/${i}`, SHARDS) === shard) found.push(`${prefix}/${i}`);
  return found;
}

async function counter(registry: Registry, name: string): Promise<number> {
  return (await registry.getSingleMetric(name)!.get()).values.reduce((sum, v) => sum + v.value, 0);
}

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: ask and reply batches', function () {
  this.timeout(30_000);
  let started: StartedTransport<AmqpTransport>;
  let registry: Registry;
  let handled: Array<{ address: string; n: number }>;
  let attempts: Map<string, number>;
  let connection: ChannelModel;
  let channel: Channel;

  beforeEach(async () => {
    handled = [];
    attempts = new Map();
    registry = new Registry();
    started = await startAmqpTransport(
      async (address, message) => {
        attempts.set(address, (attempts.get(address) ?? 0) + 1);
        if (address.startsWith('crash/')) throw new Error('handler bug');
        const n = (message as { n: number }).n;
        handled.push({ address, n });
        // A little asynchrony, so the asks of one batch finish in different turns and interleave across addresses.
        if (n % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
        return { address, n };
      },
      // Batches are the broker path's: with the shortcut an owned shard's asks would never reach the broker.
      { shardCount: SHARDS, deliveryLimit: DELIVERY_LIMIT, shortcut: false, metrics: registry },
    );
    connection = await amqp.connect(engines.amqp);
    channel = await connection.createChannel();
  });

  afterEach(async () => {
    await connection.close();
    await started.close();
  });

  it('sends one turn of asks to a shard in few messages, answers every one, and keeps each address in order', async () => {
    const { transport } = started;
    const addresses = addressesOn(1, 'batch', 4);
    const messagesBefore = await counter(registry, 'troupe_transport_ask_messages_total');
    const asks: Array<Promise<unknown>> = [];
    for (let n = 0; n < 100; n += 1) asks.push(transport.ask(addresses[n % 4]!, { n }, { timeoutMs: 10_000 }));
    const answers = await Promise.all(asks);

    expect(answers).to.deep.equal(Array.from({ length: 100 }, (_, n) => ({ address: addresses[n % 4], n })));
    // 100 asks of one turn, at most 64 per message.
    expect((await counter(registry, 'troupe_transport_ask_messages_total')) - messagesBefore).to.equal(2);
    for (const address of addresses) {
      const order = handled.filter((h) => h.address === address).map((h) => h.n);
      expect(order, address).to.deep.equal(order.slice().sort((a, b) => a - b));
      expect(order).to.have.length(25);
    }
  });

  it('retries a crashing ask alone to the delivery limit and dead-letters it alone, while its batch-mates are answered', async () => {
    const { transport } = started;
    const [crash] = addressesOn(2, 'crash', 1);
    const mates = addressesOn(2, 'mate', 3);
    const crashing = transport.ask(crash!, { n: 1, poison: true }, { timeoutMs: 20_000 }).then(() => undefined, (err: unknown) => err);
    const answered = await Promise.all(mates.map((address, i) => transport.ask(address, { n: 10 + i }, { timeoutMs: 10_000 })));
    expect(answered).to.deep.equal(mates.map((address, i) => ({ address, n: 10 + i })));

    const err = await crashing;
    expect(err).to.be.instanceOf(TroupeError);
    expect((err as TroupeError).code).to.equal('INTERNAL');
    // Once in the batch, then alone: the first delivery and DELIVERY_LIMIT redeliveries.
    expect(attempts.get(crash!)).to.equal(1 + DELIVERY_LIMIT + 1);
    for (const address of mates) expect(attempts.get(address), address).to.equal(1);

    await eventually(async () => (await channel.checkQueue(transport.names.deadLetterQueue)).messageCount === 1, 'the crashing ask in the dead-letter queue');
    const dead = await channel.get(transport.names.deadLetterQueue, { noAck: true });
    const envelope = JSON.parse((dead as amqp.GetMessage).content.toString('utf8')) as { to: string; payload: unknown };
    expect(envelope).to.deep.include({ to: crash, payload: { n: 1, poison: true } });
  });

  it('dead-letters a batch that is not a list of ask envelopes, without calling the handler', async () => {
    const { transport } = started;
    const valid = JSON.stringify({ v: 1, id: '00000000-0000-4000-8000-000000000001', type: 'tell', to: 'batch/1', from: 'x', deadline: Date.now() + 60_000, payload: {} });
    for (const body of ['not json\n{}', `${valid}\n${valid}`, '']) {
      channel.publish(transport.names.shardExchange, '0', Buffer.from(body), { type: ASK_BATCH_TYPE, persistent: true });
    }
    await eventually(async () => (await channel.checkQueue(transport.names.deadLetterQueue)).messageCount === 3, 'three malformed batches dead-lettered');
    expect(attempts.size).to.equal(0);
    const [address] = addressesOn(0, 'after', 1);
    expect(await transport.ask(address!, { n: 7 }, { timeoutMs: 5_000 })).to.deep.equal({ address, n: 7 });
  });
});
