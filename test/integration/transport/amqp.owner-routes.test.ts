/**
 * Invariant: once a reply has named the node holding a shard, asks to that shard may go straight to the holder's
 * inbox, but that never changes what an asker or an actor sees. Every routed ask is answered by whoever holds its
 * shard, and one sender's messages to an address are handled in the order sent, across asks and tells; with owner
 * routing off on either side every ask takes the queue. What a holder that cannot serve a routed ask does:
 * amqp.owner-routes.forwarding.test.ts; what reaches an inbox from elsewhere: amqp.owner-routes.inbox.test.ts.
 */
import { expect } from 'chai';
import { skipEngine } from '../../support/engines.js';
import { eventually } from '../../support/transport.js';
import { ownerRoutesWorld, ASK, ASK_MESSAGES, ROUTED, addressesOn, counter, hasSettled, on, pause, type Answer, type Handled } from './owner-routes-fixtures.js';

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: owner-routed asks', function () {
  this.timeout(30_000);
  const world = ownerRoutesWorld();
  const { openGate, askerAndHolder, learnHolder, provenHolder, forwardedBy, order } = world;
  let seen: Handled[];
  let holding: Set<string>;
  beforeEach(() => ({ seen, holding } = world));

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
    seen.length = 0;

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
