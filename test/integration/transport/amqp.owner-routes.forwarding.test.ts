/**
 * Invariant: a holder that cannot serve a routed ask (it no longer holds the shard, its consumer has no credit, or
 * the handler crashed) forwards it to the shard queue, where the next holder answers it, in order, and the delivery
 * limit and dead-lettering apply; an inbox that is gone, or a holder that left the cluster, sends the asks waiting
 * on it through the queue again, even when the shard already has a new holder or the asker took it over.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import amqp, { type ChannelModel, type ConsumeMessage } from 'amqplib';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { createEnvelope, encodeEnvelope } from '../../../transport/envelope.js';
import { engines, skipEngine } from '../../support/engines.js';
import { cutOff, eventually, requireManagementApi } from '../../support/transport.js';
import { ownerRoutesWorld, ASK, DELIVERY_LIMIT, REROUTED, ROUTED, addressesOn, counter, on, type Answer, type Node, type Handled } from './owner-routes-fixtures.js';

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: owner-routed asks, forwarding and re-sending', function () {
  this.timeout(30_000);
  const world = ownerRoutesWorld();
  const { openGate, startNode, askerAndHolder, learnHolder, provenHolder, forwardedBy, order } = world;
  let prefix: string;
  let seen: Handled[];
  let attempts: Map<string, number>;
  let holding: Set<string>;
  beforeEach(() => ({ prefix, seen, attempts, holding } = world));

  it('forwards a routed ask when the shard consumer has no credit, so it cannot overtake a queued message', async () => {
    const { a, b } = await askerAndHolder({}, { prefetch: 1 });
    await learnHolder(a, 2);
    const [blocker, address] = addressesOn(2, 'credit', 2);

    // The holder's only credit on shard 2 is taken by a held delivery; a tell to `address` then waits in the queue.
    await b.transport.tell(blocker!, { n: 0, hold: true });
    await eventually(() => holding.has(blocker!), 'the blocking delivery in its handler', 5_000);
    await b.transport.tell(address!, { n: 0 });
    const routed = await counter(a.registry, ROUTED);
    const asked = a.transport.ask<Answer>(address!, { n: 1 }, ASK);
    await eventually(async () => (await forwardedBy(b)) === 1, 'the routed ask forwarded to the queue', 5_000);
    expect(await counter(a.registry, ROUTED)).to.equal(routed + 1);
    expect(order(address!), 'nothing ran ahead of the queued tell').to.deep.equal([]);

    openGate();
    expect(await asked).to.deep.equal({ node: 'b', address, n: 1 });
    expect(order(address!)).to.deep.equal([0, 1]);
  });
  it('keeps a routed ask forwarded for lack of credit ahead of a later routed ask to the same address', async () => {
    const { a, b } = await askerAndHolder({}, { prefetch: 1 });
    await learnHolder(a, 2);
    const [blocker, address] = addressesOn(2, 'credit', 2);
    await b.transport.tell(blocker!, { n: 0, hold: true });
    await eventually(() => holding.has(blocker!), 'the blocking delivery in its handler', 5_000);
    const first = a.transport.ask<Answer>(address!, { n: 1 }, ASK);
    await eventually(async () => (await forwardedBy(b)) === 1, 'the first ask forwarded to the queue', 5_000);
    // The holder's credit comes back while the first ask still waits in the queue; the second goes to the same
    // inbox and must follow the first through the queue rather than run at once.
    openGate();
    const second = a.transport.ask<Answer>(address!, { n: 2 }, ASK);
    await Promise.all([first, second]);
    expect(order(address!)).to.deep.equal([1, 2]);
  });
  it('forwards routed asks to the next holder after a handover, then routes to it', async () => {
    const { a, b } = await askerAndHolder();
    const c = await startNode('c');
    const shard = 1;
    await learnHolder(a, shard);
    const [first, second] = addressesOn(shard, 'handover', 2);

    await b.transport.releaseShard(shard);
    const routed = await counter(a.registry, ROUTED);
    expect(await a.transport.ask<Answer>(first!, { n: 1 }, ASK)).to.deep.equal({ node: 'c', address: first, n: 1 });
    expect(await counter(a.registry, ROUTED), 'sent to b, which it still took for the holder').to.equal(routed + 1);
    await eventually(async () => (await forwardedBy(b)) === 1, 'b forwarding the ask it no longer holds the shard of', 5_000);

    await provenHolder('c', shard);
    expect(await a.transport.ask<Answer>(second!, { n: 2 }, ASK)).to.deep.equal({ node: 'c', address: second, n: 2 });
    expect(await counter(a.registry, ROUTED), 'routed, now to c').to.equal(routed + 2);
    expect(await forwardedBy(b)).to.equal(1);
    expect(await forwardedBy(c)).to.equal(0);
    expect(seen.filter((s) => s.node === 'b' && s.address.startsWith('handover/'))).to.deep.equal([]);
  });
  it("sends asks again through the queue when the holder's inbox is gone", async () => {
    const { a, b } = await askerAndHolder();
    await startNode('c');
    const shard = 2;
    await learnHolder(a, shard);
    const [first, second] = addressesOn(shard, 'gone', 2);

    // b stops and deletes its inbox; c, standing by, now holds every shard.
    await b.transport.close();
    const routed = await counter(a.registry, ROUTED);
    expect(await a.transport.ask<Answer>(first!, { n: 1 }, ASK)).to.deep.equal({ node: 'c', address: first, n: 1 });
    expect(await counter(a.registry, ROUTED), 'sent to the inbox b had').to.equal(routed + 1);
    expect(await counter(a.registry, REROUTED), 'returned by the broker and sent through the queue').to.equal(1);

    // c's reply named c's inbox.
    await provenHolder('c', shard);
    expect(await a.transport.ask<Answer>(second!, { n: 2 }, ASK)).to.deep.equal({ node: 'c', address: second, n: 2 });
    expect(await counter(a.registry, ROUTED)).to.equal(routed + 2);
    expect(await counter(a.registry, REROUTED)).to.equal(1);
  });
  // How a holder's loss reaches an asker: presence expiry (it died), or a heartbeat naming a new inbox (it reconnected).
  for (const { what, gone } of [
    { what: 'a holder that died', gone: (a: Node, b: Node | string) => a.transport.holderGone(typeof b === 'string' ? b : b.id) },
    { what: 'an inbox its node replaced (a reconnect)', gone: (a: Node, b: Node | string) => a.transport.inboxGone(typeof b === 'string' ? `${prefix}.inbox.${b}.00000000` : b.transport.inbox!) },
  ]) {
    it(`sends asks waiting on ${what} again through the queue`, async () => {
      const { a, b } = await askerAndHolder();
      const shard = 3;
      await learnHolder(a, shard);
      const address = on(shard, 'lost');
      const asked = a.transport.ask<Answer>(address, { n: 1, hold: true }, ASK);
      await eventually(() => holding.has(address), 'the routed ask in its handler', 5_000);

      gone(a, 'some-other-node');
      expect(await counter(a.registry, REROUTED), 'another node or inbox').to.equal(0);
      gone(a, b);
      expect(await counter(a.registry, REROUTED)).to.equal(1);
      openGate();
      expect(await asked).to.deep.equal({ node: 'b', address, n: 1 });
      // The copy sent through the queue ran as well (handlers are idempotent): the ask really was sent again.
      await eventually(() => attempts.get(address) === 2, 'the re-sent copy handled', 5_000);
      expect(await counter(a.registry, REROUTED)).to.equal(1);
    });
  }
  it('re-sends an ask pinned to a former holder when that holder dies, though the shard has a new holder', async () => {
    const shard = 1;
    const a = await startNode('a', { ownedShards: [] });
    // F: a bare node that holds the shard first. It answers asks from the queue naming its inbox, and takes routed
    // asks without answering them, as a node does that dies holding them.
    const connection: ChannelModel = await amqp.connect(engines.amqp);
    try {
      const channel = await connection.createChannel();
      // Named as a node names its own inbox (`<prefix>.inbox.<nodeId>.<hex>`): askers accept no other name.
      const fInbox = `${prefix}.inbox.routes-f.${randomBytes(4).toString('hex')}`;
      await channel.assertQueue(fInbox, { exclusive: true, durable: false, autoDelete: true });
      await channel.consume(fInbox, () => undefined, { noAck: true });
      const { consumerTag } = await channel.consume(a.transport.names.shardQueue(shard), (msg: ConsumeMessage | null) => {
        if (!msg) return;
        const ask = JSON.parse(msg.content.toString()) as { id: string; from: string; deadline: number };
        const reply = createEnvelope({ type: 'reply', to: ask.from, from: 'routes-f', deadline: ask.deadline, correlationId: ask.id, payload: { v: 1, ok: true, value: { node: 'f' } } });
        channel.publish('', msg.properties.replyTo as string, encodeEnvelope(reply), { correlationId: ask.id, type: 'reply', headers: { 'x-troupe-inbox': fInbox } });
        channel.ack(msg);
      }, { noAck: false });
      const g = await startNode('g');
      expect(await a.transport.ask(on(shard, 'warm'), {}, ASK)).to.deep.equal({ node: 'f' });

      const address = on(shard, 'pinned');
      const first = a.transport.ask<Answer>(address, { n: 1 }, ASK);
      await eventually(async () => (await counter(a.registry, ROUTED)) === 1, 'the first ask routed to f', 5_000);
      // F hands the shard over (G, standing by, takes it); a tell makes the next ask take the queue, and G answers.
      await channel.cancel(consumerTag);
      await a.transport.tell(on(shard, 'tell'), { n: 0 });
      expect((await a.transport.ask<Answer>(on(shard, 'then'), { n: 0 }, ASK)).node).to.equal('g');
      // The address is still pinned to F's inbox by its outstanding ask, so this one goes there too.
      const second = a.transport.ask<Answer>(address, { n: 2 }, ASK);
      await eventually(async () => (await counter(a.registry, ROUTED)) === 2, 'the second ask routed to f', 5_000);

      a.transport.holderGone('routes-f');
      expect(await counter(a.registry, REROUTED), 'both asks waiting on f').to.equal(2);
      expect(await Promise.all([first, second])).to.deep.equal([{ node: 'g', address, n: 1 }, { node: 'g', address, n: 2 }]);
      expect(order(address)).to.deep.equal([1, 2]);
    } finally {
      await connection.close();
    }
  });
  it('does not run an ask in-process ahead of one still out on the former holder when the asker takes the shard over', async function () {
    await requireManagementApi();
    this.timeout(45_000);
    // B holds every shard; A consumes them all as a standby, so it takes over when B is cut off from the broker.
    const b = await startNode('b');
    const a = await startNode('a');
    const shard = 2;
    await learnHolder(a, shard);
    const address = on(shard, 'takeover');
    const first = a.transport.ask<Answer>(address, { n: 1, hold: true }, { timeoutMs: 30_000 });
    await eventually(() => holding.has(address), 'the routed ask held in b', 5_000);

    await cutOff(b.transport.connectionName);
    // B's handler may finish now: its answer cannot leave over the connection it came on.
    openGate();
    // A learns it holds the shard from a delivery, and proves it with its seal.
    await a.transport.tell(on(shard, 'wake'), { n: 0 });
    await provenHolder('a', shard);
    const second = a.transport.ask<Answer>(address, { n: 2 }, { timeoutMs: 30_000 });
    // The first ask's inbox went with b's connection: sending the second there brings both back, through the queue.
    expect(await Promise.all([first, second])).to.deep.equal([{ node: 'a', address, n: 1 }, { node: 'a', address, n: 2 }]);
    expect(seen.filter((s) => s.node === 'a' && s.address === address).map((s) => s.n)).to.deep.equal([1, 2]);
  });
  it('forwards a routed ask whose handler crashes, so the delivery limit dead-letters it, and the shard keeps answering', async () => {
    const { a, b } = await askerAndHolder();
    const shard = 0;
    await learnHolder(a, shard);
    const crash = on(shard, 'crash');
    const mates = addressesOn(shard, 'mate', 3);
    const routed = await counter(a.registry, ROUTED);

    const crashing = a.transport.ask(crash, { n: 1, poison: true }, { timeoutMs: 20_000 }).then(() => undefined, (err: unknown) => err);
    const answered = await Promise.all(mates.map((address, i) => a.transport.ask(address, { n: 10 + i }, ASK)));
    expect(answered).to.deep.equal(mates.map((address, i) => ({ node: 'b', address, n: 10 + i })));

    const err = await crashing;
    expect(err).to.be.instanceOf(TroupeError);
    expect((err as TroupeError).code).to.equal('INTERNAL');
    expect(await counter(a.registry, ROUTED)).to.equal(routed + 1 + mates.length);
    expect(await forwardedBy(b)).to.equal(1);
    // Once routed, then from the queue: the first delivery and DELIVERY_LIMIT redeliveries.
    expect(attempts.get(crash)).to.equal(1 + 1 + DELIVERY_LIMIT);
    for (const address of mates) expect(attempts.get(address), address).to.equal(1);

    const connection = await amqp.connect(engines.amqp);
    try {
      const channel = await connection.createChannel();
      await eventually(async () => (await channel.checkQueue(b.transport.names.deadLetterQueue)).messageCount === 1, 'the crashing ask dead-lettered');
      const dead = await channel.get(b.transport.names.deadLetterQueue, { noAck: true });
      const envelope = JSON.parse((dead as amqp.GetMessage).content.toString('utf8')) as { type: string; to: string; payload: unknown };
      expect(envelope).to.deep.include({ type: 'ask', to: crash, payload: { n: 1, poison: true } });
    } finally {
      await connection.close();
    }
    expect(await a.transport.ask(mates[0]!, { n: 20 }, ASK)).to.deep.equal({ node: 'b', address: mates[0], n: 20 });
  });
});
