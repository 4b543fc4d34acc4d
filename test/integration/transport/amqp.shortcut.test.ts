/**
 * Invariant: an ask to a shard this node holds may skip the broker, but never changes what a caller or an actor
 * sees. Once the shard is sealed, asks are answered in-process (counted by troupe_transport_in_process_asks_total)
 * with a copy that crossed the envelope codec and the same deadline; a tell sent through the broker is never
 * overtaken by a later in-process ask to the same address; and during a handover asks take the broker again and
 * run on the next holder only after the in-process ones already taken have finished.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { shardOf } from '../../../transport/shards.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { skipEngine } from '../../support/engines.js';
import { eventually, startAmqpTransport, testPrefix, type StartedTransport } from '../../support/transport.js';

const SHARDS = 2;

async function inProcessAsks(registry: Registry): Promise<number> {
  const metric = await registry.getSingleMetric('troupe_transport_in_process_asks_total')?.get();
  return metric?.values[0]?.value ?? 0;
}

/** Asks until the shard of `address` is sealed and an ask to it is answered in-process. */
async function sealed(transport: AmqpTransport, registry: Registry, address: string): Promise<void> {
  await eventually(async () => {
    const before = await inProcessAsks(registry);
    await transport.ask(address, { warmup: true }, { timeoutMs: 5_000 });
    return (await inProcessAsks(registry)) > before;
  }, `the shard of ${address} to be sealed`);
}

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: in-process shortcut', function () {
  this.timeout(30_000);
  const started: StartedTransport<AmqpTransport>[] = [];
  let seen: Array<{ node: string; address: string; message: any }>;
  let gate: Promise<void>;
  let openGate: () => void;

  const handlerFor = (node: string) => async (address: string, message: unknown) => {
    if (address.startsWith('slow/') && (message as { hold?: boolean }).hold) await gate;
    if (address.startsWith('hang/')) await gate;
    // A random pause lets a later message overtake an earlier one if the transport does not keep the turn.
    if (address.startsWith('record/')) await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
    seen.push({ node, address, message });
    return { node, message };
  };

  beforeEach(() => {
    seen = [];
    gate = new Promise((resolve) => (openGate = resolve));
  });

  afterEach(async () => {
    openGate();
    await Promise.all(started.splice(0).map((s) => s.close()));
  });

  it('answers asks to a held shard in-process, through the codec and with the same deadline', async () => {
    const registry = new Registry();
    const a = await startAmqpTransport(handlerFor('a'), { shardCount: SHARDS, metrics: registry });
    started.push(a);
    await sealed(a.transport, registry, 'echo/1');
    const message = { text: 'héllo', nested: { list: [1, 2] } };
    const before = await inProcessAsks(registry);
    const reply = await a.transport.ask<{ message: unknown }>('echo/1', message, { timeoutMs: 5_000 });
    expect(reply.message).to.deep.equal(message);
    expect(reply.message).not.to.equal(message);
    expect(await inProcessAsks(registry)).to.equal(before + 1);

    const hangAddress = Array.from({ length: 50 }, (_, i) => `hang/${i}`).find((x) => shardOf(x, SHARDS) === shardOf('echo/1', SHARDS))!;
    const startedAt = Date.now();
    const err = await a.transport.ask(hangAddress, {}, { timeoutMs: 300 }).catch((caught: unknown) => caught);
    expect(err).to.be.instanceOf(TroupeError);
    expect((err as TroupeError).code).to.equal('TRANSPORT_TIMEOUT');
    expect(Date.now() - startedAt).to.be.within(250, 3_000);
    expect(await inProcessAsks(registry)).to.equal(before + 2);
  });

  it('never lets an in-process ask overtake a tell of the same node still in the queue', async () => {
    const registry = new Registry();
    const a = await startAmqpTransport(handlerFor('a'), { shardCount: SHARDS, metrics: registry });
    started.push(a);
    await sealed(a.transport, registry, 'record/x');
    seen = [];
    const sends: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i += 1) {
      sends.push(a.transport.tell('record/x', { i, via: 'tell' }));
      sends.push(a.transport.ask('record/x', { i, via: 'ask' }, { timeoutMs: 10_000 }));
    }
    await Promise.all(sends);
    await eventually(() => seen.length === 80, 'every message handled');
    const order = seen.map((s) => `${s.message.i}:${s.message.via}`);
    const sent = Array.from({ length: 40 }, (_, i) => [`${i}:tell`, `${i}:ask`]).flat();
    expect(order).to.deep.equal(sent);
  });

  it('sends asks through the broker during a handover, to run on the next holder after the in-process ones', async () => {
    const prefix = testPrefix();
    const registry = new Registry();
    const a = await startAmqpTransport(handlerFor('a'), { shardCount: SHARDS, metrics: registry, prefix, nodeId: 'shortcut-a' });
    started.push(a);
    const shard = shardOf('slow/1', SHARDS);
    await sealed(a.transport, registry, 'slow/1');
    const b = await startAmqpTransport(handlerFor('b'), { shardCount: SHARDS, prefix, nodeId: 'shortcut-b', ownedShards: [shard] });
    started.push(b);
    seen = [];

    const before = await inProcessAsks(registry);
    const first = a.transport.ask('slow/1', { n: 1, hold: true }, { timeoutMs: 10_000 });
    expect(await inProcessAsks(registry)).to.equal(before); // counted when answered
    const handover = a.transport.releaseShard(shard);
    // The handover's first step (no more shortcut, hold new deliveries) runs in a microtask; this waits for it.
    await new Promise((resolve) => setImmediate(resolve));
    const second = a.transport.ask('slow/1', { n: 2 }, { timeoutMs: 10_000 });
    openGate();
    const [r1, r2] = await Promise.all([first, second]);
    await handover;
    expect(r1).to.deep.include({ node: 'a' });
    expect(r2).to.deep.include({ node: 'b' });
    expect(seen.map((s) => `${s.node}:${s.message.n}`)).to.deep.equal(['a:1', 'b:2']);
    expect(await inProcessAsks(registry)).to.equal(before + 1);
  });
});
