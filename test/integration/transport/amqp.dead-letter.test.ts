/**
 * Invariant: a message that can never be handled does not block its shard. A message whose handler crashes every
 * time is retried up to the delivery limit, then lands in the dead-letter queue (and its asker gets INTERNAL);
 * a body that is not a v1 envelope goes to the dead-letter queue at once, without reaching the handler; and asks
 * to the same shard keep being answered.
 */
import { expect } from 'chai';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { shardOf } from '../../../transport/shards.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { engines, skipEngine } from '../../support/engines.js';
import { eventually, startAmqpTransport, type StartedTransport } from '../../support/transport.js';

const SHARDS = 4;
const DELIVERY_LIMIT = 3;

/** An echo address on the same shard as `address`, to show that shard still flows. */
function neighbourOf(address: string): string {
  for (let i = 0; ; i += 1) if (shardOf(`echo/${i}`, SHARDS) === shardOf(address, SHARDS)) return `echo/${i}`;
}

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: poison and malformed messages', function () {
  this.timeout(30_000);
  let started: StartedTransport<AmqpTransport>;
  let attempts: Map<string, number>;
  let connection: ChannelModel;
  let channel: Channel;

  beforeEach(async () => {
    attempts = new Map();
    started = await startAmqpTransport(
      async (address, message) => {
        attempts.set(address, (attempts.get(address) ?? 0) + 1);
        if (address.startsWith('crash/')) throw new Error('handler bug');
        return { address, message };
      },
      // Redelivery and dead-lettering are the broker path's; an in-process ask would answer INTERNAL at once.
      { shardCount: SHARDS, deliveryLimit: DELIVERY_LIMIT, shortcut: false },
    );
    connection = await amqp.connect(engines.amqp);
    channel = await connection.createChannel();
  });

  afterEach(async () => {
    await connection.close();
    await started.close();
  });

  async function deadLetters(): Promise<number> {
    return (await channel.checkQueue(started.transport.names.deadLetterQueue)).messageCount;
  }

  it('retries a crashing ask up to the delivery limit, dead-letters it, answers INTERNAL, and the shard keeps flowing', async () => {
    const { transport } = started;
    let err: unknown;
    try {
      await transport.ask('crash/p1', { poison: true }, { timeoutMs: 15_000 });
    } catch (caught) {
      err = caught;
    }
    expect(err).to.be.instanceOf(TroupeError);
    expect((err as TroupeError).code).to.equal('INTERNAL');
    expect(attempts.get('crash/p1')).to.equal(DELIVERY_LIMIT + 1);

    await eventually(async () => (await deadLetters()) === 1, 'the poison message in the dead-letter queue');
    const dead = await channel.get(transport.names.deadLetterQueue, { noAck: true });
    expect(dead).to.not.equal(false);
    const envelope = JSON.parse((dead as amqp.GetMessage).content.toString('utf8')) as { to: string; payload: unknown };
    expect(envelope.to).to.equal('crash/p1');
    expect(envelope.payload).to.deep.equal({ poison: true });

    const neighbour = neighbourOf('crash/p1');
    expect(await transport.ask(neighbour, 'still there?', { timeoutMs: 5_000 })).to.deep.equal({ address: neighbour, message: 'still there?' });
  });

  it('dead-letters a told message that crashes every time', async () => {
    await started.transport.tell('crash/t1', { n: 1 });
    await eventually(async () => (await deadLetters()) === 1, 'the told poison message in the dead-letter queue');
    expect(attempts.get('crash/t1')).to.equal(DELIVERY_LIMIT + 1);
  });

  it('sends a body that is not an envelope straight to the dead-letter queue without calling the handler', async () => {
    const { transport } = started;
    const bodies = [Buffer.from('not json'), Buffer.from(JSON.stringify({ v: 2, id: 'x' })), Buffer.from(JSON.stringify({ v: 1, type: 'ask' }))];
    for (const body of bodies) channel.publish(transport.names.shardExchange, '0', body);
    await eventually(async () => (await deadLetters()) === bodies.length, 'the malformed bodies in the dead-letter queue');
    expect(attempts.size).to.equal(0);
    const neighbour = (() => {
      for (let i = 0; ; i += 1) if (shardOf(`echo/${i}`, SHARDS) === 0) return `echo/${i}`;
    })();
    expect(await transport.ask(neighbour, 1, { timeoutMs: 5_000 })).to.deep.equal({ address: neighbour, message: 1 });
  });
});
