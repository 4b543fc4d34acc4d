/**
 * Invariant: once a reply has named the node holding a shard, asks to that shard may go straight to the holder's
 * inbox, but that never changes what an asker or an actor sees. Every routed ask is answered by whoever holds its
 * shard; one sender's messages to an address are handled in the order sent, across asks and tells; a holder that
 * cannot serve a routed ask (it no longer holds the shard, its consumer has no credit, or the handler crashed)
 * forwards it to the shard queue, where the next holder answers it and the delivery limit and dead-lettering
 * apply; an inbox that is gone, or a holder that left the cluster, sends the asks waiting on it through the queue
 * again; and nothing unreadable in an inbox reaches a handler.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { Registry } from 'prom-client';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { shardOf } from '../../../transport/shards.js';
import { createEnvelope, encodeEnvelope } from '../../../transport/envelope.js';
import { ASK_BATCH_TYPE, encodeBatch } from '../../../transport/amqp/ask-batch.js';
import type { AmqpTransport, AmqpTransportOptions } from '../../../transport/amqp/transport.js';
import { engines, skipEngine } from '../../support/engines.js';
import { cutOff, eventually, requireManagementApi, startAmqpTransport, testPrefix, type StartedTransport } from '../../support/transport.js';

const SHARDS = 4;
const DELIVERY_LIMIT = 2;
const ASK = { timeoutMs: 5_000 };

const ROUTED = 'troupe_transport_routed_asks_total';
const FORWARDED = 'troupe_transport_forwarded_asks_total';
const REROUTED = 'troupe_transport_rerouted_asks_total';
const ASK_MESSAGES = 'troupe_transport_ask_messages_total';

/** `count` addresses named `<prefix>/<i>` that all live on `shard`. */
function addressesOn(shard: number, prefix: string, count: number): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count; i += 1) if (shardOf(`${prefix}/${i}`, SHARDS) === shard) found.push(`${prefix}/${i}`);
  return found;
}

const on = (shard: number, prefix: string) => addressesOn(shard, prefix, 1)[0]!;

async function counter(registry: Registry, name: string): Promise<number> {
  return (await registry.getSingleMetric(name)!.get()).values.reduce((sum, v) => sum + v.value, 0);
}

async function deliveries(registry: Registry, outcome: string): Promise<number> {
  return (await registry.getSingleMetric('troupe_transport_deliveries_total')!.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

/** Whether `promise` has settled once pending callbacks have run. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true), () => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Node {
  readonly id: string;
  /** What its handler answers as `node`. */
  readonly name: string;
  readonly started: StartedTransport<AmqpTransport>;
  readonly transport: AmqpTransport;
  readonly registry: Registry;
}

interface Answer {
  readonly node: string;
  readonly address: string;
  readonly n: number | undefined;
}

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: owner-routed asks', function () {
  this.timeout(30_000);
  let prefix: string;
  let nodes: Node[];
  /** Messages handled, in the order their handlers finished; per address that is the order they ran. */
  let seen: Array<{ node: string; address: string; n: number | undefined }>;
  /** Handler entries per address, crashes included. */
  let attempts: Map<string, number>;
  /** Addresses whose handler is waiting at the gate. */
  let holding: Set<string>;
  let gate: Promise<void>;
  let openGate: () => void;
  let forwardedBase: Map<string, number>;

  const handlerFor = (node: string) => async (address: string, message: unknown) => {
    const { n, hold } = (message ?? {}) as { n?: number; hold?: boolean };
    attempts.set(address, (attempts.get(address) ?? 0) + 1);
    if (address.startsWith('crash/')) throw new Error('handler bug');
    if (hold) {
      holding.add(address);
      await gate;
      holding.delete(address);
    }
    // A random pause lets a later message overtake an earlier one if nothing keeps the address's turn.
    if (address.startsWith('record/')) await pause(Math.random() * 2);
    seen.push({ node, address, n });
    return { node, address, n } satisfies Answer;
  };

  /** Starts a node on this test's topology; every node declares the shard queues with the same delivery limit. */
  async function startNode(name: string, options: Partial<AmqpTransportOptions> = {}): Promise<Node> {
    const id = `routes-${name}-${randomBytes(3).toString('hex')}`;
    const registry = new Registry();
    const started = await startAmqpTransport(handlerFor(name), {
      prefix, shardCount: SHARDS, deliveryLimit: DELIVERY_LIMIT, nodeId: id, metrics: registry, ...options,
    });
    const node = { id, name, started, transport: started.transport, registry };
    nodes.push(node);
    return node;
  }

  /** B holds every shard; A holds none and asks. */
  async function askerAndHolder(a: Partial<AmqpTransportOptions> = {}, b: Partial<AmqpTransportOptions> = {}): Promise<{ a: Node; b: Node }> {
    const holder = await startNode('b', b);
    const asker = await startNode('a', { ownedShards: [], ...a });
    return { a: asker, b: holder };
  }

  /**
   * Makes `a` learn `b` as the holder of `shard`: an ask through the queue, b's proof that it holds the shard (its
   * seal marker back; until then it forwards routed asks), then one that must take b's inbox and run there. The
   * forwards counted so far become every node's baseline for `forwardedBy`.
   */
  async function learnHolder(a: Node, shard: number): Promise<void> {
    const address = on(shard, 'warmup');
    const first = await a.transport.ask<Answer>(address, { n: 0 }, ASK);
    expect(first.node).to.equal('b');
    await provenHolder('b', shard);
    const routed = await counter(a.registry, ROUTED);
    const second = await a.transport.ask<Answer>(address, { n: 1 }, ASK);
    expect(second.node).to.equal('b');
    expect(await counter(a.registry, ROUTED), `asks to shard ${shard} routed to b`).to.equal(routed + 1);
    for (const node of nodes) forwardedBase.set(node.id, await counter(node.registry, FORWARDED));
  }

  async function provenHolder(name: string, shard: number): Promise<void> {
    const node = nodes.find((n) => n.name === name)!;
    await eventually(() => node.transport.shardStatus().proven.includes(shard), `${name} proven holder of shard ${shard}`, 5_000);
  }

  /** Routed asks `node` forwarded since the last `learnHolder`. */
  const forwardedBy = async (node: Node) => (await counter(node.registry, FORWARDED)) - (forwardedBase.get(node.id) ?? 0);

  const order = (address: string) => seen.filter((s) => s.address === address).map((s) => s.n);

  beforeEach(() => {
    prefix = testPrefix();
    nodes = [];
    seen = [];
    attempts = new Map();
    holding = new Set();
    forwardedBase = new Map();
    gate = new Promise((resolve) => (openGate = resolve));
  });

  afterEach(async () => {
    openGate();
    // Every node stops before any of them deletes the shared topology under the others.
    for (const node of nodes) await node.transport.close();
    for (const node of nodes) await node.started.close();
  });

  it('routes asks to the holder named by a reply, answers them all, and keeps each address in order', async () => {
    const { a, b } = await askerAndHolder();
    const addresses = [...addressesOn(1, 'record', 2), ...addressesOn(2, 'record', 2)];

    const first = await a.transport.ask<Answer>(addresses[0]!, { n: -1 }, ASK);
    expect(first).to.deep.equal({ node: 'b', address: addresses[0], n: -1 });
    expect(await counter(a.registry, ROUTED), 'the first ask to a shard takes its queue').to.equal(0);
    await a.transport.ask(addresses[2]!, { n: -1 }, ASK);
    expect(await counter(a.registry, ROUTED)).to.equal(0);
    await provenHolder('b', 1);
    await provenHolder('b', 2);
    seen = [];

    const messagesBefore = await counter(a.registry, ASK_MESSAGES);
    const asks: Array<Promise<unknown>> = [];
    for (let n = 0; n < 200; n += 1) asks.push(a.transport.ask(addresses[n % 4]!, { n }, { timeoutMs: 10_000 }));
    const answers = await Promise.all(asks);

    expect(answers).to.deep.equal(Array.from({ length: 200 }, (_, n) => ({ node: 'b', address: addresses[n % 4], n })));
    expect(await counter(a.registry, ROUTED)).to.equal(200);
    // One turn's asks to one inbox share messages, at most 64 each, whatever their shards.
    expect((await counter(a.registry, ASK_MESSAGES)) - messagesBefore).to.equal(4);
    expect(await forwardedBy(b)).to.equal(0);
    for (const address of addresses) {
      const handled = order(address);
      expect(handled, address).to.have.length(50);
      expect(handled, address).to.deep.equal(handled.slice().sort((x, y) => x! - y!));
    }
  });

  it('keeps an address on the queue while an ask to it through the queue is outstanding', async () => {
    const { a } = await askerAndHolder();
    const [pinned, other] = addressesOn(3, 'pin', 2);

    // Nothing is known of shard 3 yet: this ask takes the queue and is held by the handler.
    const held = a.transport.ask<Answer>(pinned!, { n: 1, hold: true }, ASK);
    await eventually(() => holding.has(pinned!), 'the first ask in its handler', 5_000);
    // Another address of the shard teaches the holder meanwhile, and its next ask takes the inbox.
    await a.transport.ask(other!, { n: 1 }, ASK);
    await a.transport.ask(other!, { n: 2 }, ASK);
    const routed = await counter(a.registry, ROUTED);
    expect(routed).to.equal(1);

    const follower = a.transport.ask<Answer>(pinned!, { n: 2 }, ASK);
    await pause(50);
    expect(await counter(a.registry, ROUTED), 'the follower did not take the inbox').to.equal(routed);
    openGate();
    expect((await held).n).to.equal(1);
    expect((await follower).n).to.equal(2);
    expect(order(pinned!)).to.deep.equal([1, 2]);

    // Nothing outstanding any more: the address takes the inbox like the others.
    expect((await a.transport.ask<Answer>(pinned!, { n: 3 }, ASK)).n).to.equal(3);
    expect(await counter(a.registry, ROUTED)).to.equal(routed + 1);
  });

  it('holds a tell back until the routed asks before it are answered, and the asks after it until it is sent', async () => {
    const { a } = await askerAndHolder();
    await learnHolder(a, 1);
    const address = on(1, 'told');
    const routed = await counter(a.registry, ROUTED);

    const ask1 = a.transport.ask<Answer>(address, { n: 1, hold: true }, ASK);
    await eventually(() => holding.has(address), 'the routed ask in its handler', 5_000);
    expect(await counter(a.registry, ROUTED)).to.equal(routed + 1);
    const tell2 = a.transport.tell(address, { n: 2 });
    const ask3 = a.transport.ask<Answer>(address, { n: 3 }, ASK);
    await pause(300);
    // Published now, the tell could overtake the routed ask on its way to the holder.
    expect(await hasSettled(tell2), 'tell published while a routed ask was outstanding').to.equal(false);
    expect(await hasSettled(ask3)).to.equal(false);
    expect(order(address)).to.deep.equal([]);

    openGate();
    await Promise.all([ask1, tell2, ask3]);
    expect(order(address)).to.deep.equal([1, 2, 3]);
    // The ask after the tell took the queue behind it; its answer proves the tell arrived, so routing resumes.
    expect(await counter(a.registry, ROUTED)).to.equal(routed + 1);
    expect((await a.transport.ask<Answer>(address, { n: 4 }, ASK)).n).to.equal(4);
    expect(await counter(a.registry, ROUTED)).to.equal(routed + 2);
    expect(order(address)).to.deep.equal([1, 2, 3, 4]);
  });

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

  it('keeps every ask on the queue when the asker has owner routing off', async () => {
    const { a, b } = await askerAndHolder({ ownerRouting: false });
    const address = on(1, 'off');
    const messagesBefore = await counter(a.registry, ASK_MESSAGES);
    for (let n = 0; n < 5; n += 1) expect(await a.transport.ask(address, { n }, ASK)).to.deep.equal({ node: 'b', address, n });
    expect(await counter(a.registry, ROUTED)).to.equal(0);
    expect((await counter(a.registry, ASK_MESSAGES)) - messagesBefore).to.equal(5);
    expect(await forwardedBy(b)).to.equal(0);
    expect(order(address)).to.deep.equal([0, 1, 2, 3, 4]);
  });

  it('keeps every ask on the queue when the holder has owner routing off: its replies name no inbox', async () => {
    const { a } = await askerAndHolder({}, { ownerRouting: false });
    const address = on(2, 'off');
    for (let n = 0; n < 5; n += 1) expect(await a.transport.ask(address, { n }, ASK)).to.deep.equal({ node: 'b', address, n });
    expect(await counter(a.registry, ROUTED)).to.equal(0);
    expect(order(address)).to.deep.equal([0, 1, 2, 3, 4]);
  });
});
