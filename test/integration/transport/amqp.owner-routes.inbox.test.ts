/**
 * Invariant: nothing unreadable in an inbox reaches a handler, an asker routes only to the replying node's own
 * inbox, and a message on the wrong shard queue is dead-lettered instead of run there; the shard keeps answering.
 */
import { expect } from 'chai';
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { shardOf } from '../../../transport/shards.js';
import { createEnvelope, encodeEnvelope } from '../../../transport/envelope.js';
import { ASK_BATCH_TYPE, encodeBatch } from '../../../transport/amqp/ask-batch.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { engines, skipEngine } from '../../support/engines.js';
import { eventually } from '../../support/transport.js';
import { ownerRoutesWorld, ASK, ROUTED, SHARDS, counter, deliveries, on, pause } from './owner-routes-fixtures.js';

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: owner-routed asks', function () {
  this.timeout(30_000);
  const world = ownerRoutesWorld();
  const { startNode, askerAndHolder, learnHolder } = world;
  let prefix: string;
  let attempts: Map<string, number>;
  beforeEach(() => ({ prefix, attempts } = world));

  describe('straight into an inbox', () => {
    let connection: ChannelModel;
    let channel: Channel;

    beforeEach(async () => {
      connection = await amqp.connect(engines.amqp);
      channel = await connection.createChannel();
    });

    afterEach(async () => {
      await connection.close();
    });

    /** Asks through a shard queue as a bare AMQP client would, and answers the reply's inbox header. */
    async function inboxNamedByReply(transport: AmqpTransport, address: string): Promise<unknown> {
      const envelope = createEnvelope({ type: 'ask', to: address, from: 'bare-client', deadline: Date.now() + 5_000, payload: { n: 0 } });
      let resolveReply!: (msg: ConsumeMessage) => void;
      const reply = new Promise<ConsumeMessage>((resolve) => (resolveReply = resolve));
      // Direct reply-to: the channel must consume it before publishing the ask.
      await channel.consume('amq.rabbitmq.reply-to', (msg) => msg && resolveReply(msg), { noAck: true });
      channel.publish(transport.names.shardExchange, String(shardOf(address, SHARDS)), encodeEnvelope(envelope), {
        replyTo: 'amq.rabbitmq.reply-to', correlationId: envelope.id, messageId: envelope.id, type: 'ask', contentType: 'application/json',
      });
      const msg = await Promise.race([reply, pause(5_000).then(() => { throw new Error('no reply to the bare ask'); })]);
      expect(msg.properties.correlationId).to.equal(envelope.id);
      return msg.properties.headers?.['x-troupe-inbox'];
    }

    it('drops an unreadable routed message without calling the handler, and keeps answering', async () => {
      const { a, b } = await askerAndHolder();
      const shard = 1;
      await learnHolder(a, shard);
      const inbox = await inboxNamedByReply(b.transport, on(shard, 'bare'));
      expect(inbox).to.be.a('string');
      expect(inbox as string).to.match(new RegExp(`^${prefix}\\.inbox\\.${b.id}\\.[0-9a-f]+$`));

      const tell = (to: string) => encodeEnvelope(createEnvelope({ type: 'tell', to, from: 'intruder', deadline: Date.now() + 60_000, payload: { n: 1 } }));
      const ask = (to: string) => encodeEnvelope(createEnvelope({ type: 'ask', to, from: 'intruder', deadline: Date.now() + 60_000, payload: { n: 1 } }));
      const malformedBefore = await deliveries(b.registry, 'unreadable-routed');
      const options = { replyTo: 'amq.rabbitmq.reply-to', contentType: 'application/json' };
      channel.publish('', inbox as string, Buffer.from('not json \u0000\u00ff'), { ...options, type: 'ask' });
      channel.publish('', inbox as string, tell(on(shard, 'intruder-tell')), { ...options, type: 'ask' });
      // A batch is read whole: one tell in it drops the ask beside it too.
      channel.publish('', inbox as string, encodeBatch([ask(on(shard, 'intruder-ask')), tell(on(shard, 'intruder-batch'))]), { ...options, type: ASK_BATCH_TYPE });
      await eventually(async () => (await deliveries(b.registry, 'unreadable-routed')) === malformedBefore + 3, 'three unreadable routed messages dropped', 5_000);

      const address = on(shard, 'after');
      const routed = await counter(a.registry, ROUTED);
      expect(await a.transport.ask(address, { n: 7 }, ASK)).to.deep.equal({ node: 'b', address, n: 7 });
      expect(await counter(a.registry, ROUTED)).to.equal(routed + 1);
      expect([...attempts.keys()].filter((key) => key.startsWith('intruder'))).to.deep.equal([]);
    });

    it("routes nowhere on a reply header that is not the replying node's own inbox", async () => {
      const a = await startNode('a', { ownedShards: [] });
      const shard = 0;
      // A bare holder answering with headers naming a shard queue, another node's inbox, and a name with a junk suffix.
      const names = [a.transport.names.shardQueue(1), `${prefix}.inbox.someone-else.abcdef01`, `${prefix}.inbox.bare-holder.not-hex`];
      let replies = 0;
      await channel.consume(a.transport.names.shardQueue(shard), (msg: ConsumeMessage | null) => {
        if (!msg) return;
        const ask = JSON.parse(msg.content.toString()) as { id: string; from: string; deadline: number };
        const reply = createEnvelope({ type: 'reply', to: ask.from, from: 'bare-holder', deadline: ask.deadline, correlationId: ask.id, payload: { v: 1, ok: true, value: 'bare' } });
        const inbox = names[replies++ % names.length]!;
        channel.publish('', msg.properties.replyTo as string, encodeEnvelope(reply), { correlationId: ask.id, type: 'reply', headers: { 'x-troupe-inbox': inbox } });
        channel.ack(msg);
      }, { noAck: false });
      for (let n = 0; n < 6; n += 1) expect(await a.transport.ask(on(shard, `header-${n}`), { n }, ASK)).to.equal('bare');
      expect(await counter(a.registry, ROUTED), 'every ask through the queue').to.equal(0);
      expect(replies).to.equal(6);
    });

    it('dead-letters a message on the wrong shard queue instead of running its actor there', async () => {
      const b = await startNode('b');
      const wrong = on(1, 'misplaced');
      const envelope = createEnvelope({ type: 'tell', to: wrong, from: 'intruder', deadline: Date.now() + 60_000, payload: { n: 1 } });
      channel.publish(b.transport.names.shardExchange, '0', encodeEnvelope(envelope), { type: 'tell', messageId: envelope.id, persistent: true });
      await eventually(async () => (await channel.checkQueue(b.transport.names.deadLetterQueue)).messageCount === 1, 'the misplaced tell dead-lettered');
      expect(attempts.has(wrong)).to.equal(false);
      const address = on(0, 'placed');
      await b.transport.tell(address, { n: 2 });
      await eventually(() => attempts.get(address) === 1, 'the shard still flowing');
    });
  });
});
