// Invariant: deliver/ask reach exactly one actor per address, which handles one message at a time (500
// concurrent increments count to 500, none lost); hostile input is refused before any actor exists for it;
// a rejection is a TroupeError with the machine's code and changes nothing; an asker past its deadline gets
// TRANSPORT_TIMEOUT; metrics show live actors, handled messages and decide time per kind.
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { counterSystem, eventually, rejectionOf } from './counter-machine.js';

describe('actor runtime: delivery', () => {
  it('serialises 500 concurrent increments to one actor without losing an update', async () => {
    const { system, store, counter } = counterSystem();
    const ref = counter('hot');
    const replies = await Promise.all(Array.from({ length: 500 }, () => ref.ask({ type: 'counter.increment' })));
    expect(replies.map((r) => r.count).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 500 }, (_, i) => i + 1));
    expect(store.stored('counter/hot')).to.deep.equal({ version: 500, state: { status: 'on', count: 500 } });
    await system.stop();
  });

  it('keeps actors apart: each address has its own state', async () => {
    const { system, counter } = counterSystem();
    await Promise.all([counter('a').ask({ type: 'counter.increment', by: 5 }), counter('b').ask({ type: 'counter.toggle' })]);
    expect(await system.deliver('counter/a', { type: 'counter.read' })).to.deep.equal({ status: 'on', count: 5 });
    expect(await system.deliver('counter/b', { type: 'counter.read' })).to.deep.equal({ status: 'off', count: 0 });
    await system.stop();
  });

  it('answers a machine rejection with its code and leaves state and store alone', async () => {
    const { system, store, counter } = counterSystem();
    await counter('a').ask({ type: 'counter.toggle' });
    const err = await rejectionOf(counter('a').ask({ type: 'counter.increment' }));
    expect(err).to.be.instanceOf(TroupeError);
    expect(err).to.deep.include({ code: 'ILLEGAL_TRANSITION', details: { status: 'off', msgType: 'counter.increment' } });
    expect(store.stored('counter/a')?.version).to.equal(1);
    await system.stop();
  });

  it('refuses unknown kinds and malformed addresses with NOT_FOUND, spawning nothing', async () => {
    const { system } = counterSystem();
    for (const address of ['ghost/1', 'counter', 'counter/', '/x', 'x'.repeat(600), 42 as unknown as string]) {
      const err = await rejectionOf(system.deliver(address, { type: 'counter.read' }));
      expect(err.code, String(address).slice(0, 20)).to.equal('NOT_FOUND');
    }
    expect(system.aliveCount).to.equal(0);
    await system.stop();
  });

  it('refuses malformed messages with VALIDATION_FAILED before an actor exists', async () => {
    const { system, store } = counterSystem();
    const hostile: unknown[] = [null, 'counter.read', [], {}, { type: 7 }, { type: 'x'.repeat(200) }, { type: 'counter.increment', by: 1e12 }, { type: 'counter.nope' }];
    for (const message of hostile) {
      const err = await rejectionOf(system.deliver('counter/a', message));
      expect(err.code, JSON.stringify(message)?.slice(0, 40)).to.equal('VALIDATION_FAILED');
    }
    expect(system.aliveCount).to.equal(0);
    expect(store.loads).to.equal(0);
    await system.stop();
  });

  it('rejects with TRANSPORT_TIMEOUT when no answer comes before the deadline', async () => {
    const { system, store, counter } = counterSystem();
    const hold = store.holdSaves();
    const err = await rejectionOf(counter('a').ask({ type: 'counter.increment' }, 20));
    expect(err).to.deep.include({ code: 'TRANSPORT_TIMEOUT' });
    hold.release();
    await system.stop();
  });

  it('works on a delivered ask until the asker\'s deadline, not its own default', async () => {
    const { system, store } = counterSystem({ defaultAskTimeoutMs: 30 });
    const hold = store.holdSaves();
    const answered = system.deliver('counter/a', { type: 'counter.increment' }, Date.now() + 2_000);
    await new Promise((resolve) => setTimeout(resolve, 120)); // four of the runtime's own default deadlines
    hold.release();
    expect(await answered).to.deep.include({ count: 1 });
    const late = store.holdSaves();
    const err = await rejectionOf(system.deliver('counter/b', { type: 'counter.increment' }, Date.now() + 40));
    expect(err).to.deep.include({ code: 'TRANSPORT_TIMEOUT' });
    late.release();
    await system.stop();
  });

  it('tell applies the message without an answer; a told rejection is logged', async () => {
    const { system, store, counter, logs } = counterSystem();
    counter('a').tell({ type: 'counter.toggle' });
    counter('a').tell({ type: 'counter.increment' });
    await eventually(() => logs.some((l) => l.msg === 'told message not applied'), 'rejection logged');
    expect(store.stored('counter/a')?.state).to.deep.equal({ status: 'off', count: 0 });
    expect(() => counter('a').tell({ type: 'bogus' } as never)).to.throw(TroupeError);
    await system.stop();
  });

  it('refuses new messages with SHUTTING_DOWN once stopping, after draining what was queued', async () => {
    const { system, store, counter } = counterSystem();
    const hold = store.holdSaves();
    const inFlight = counter('a').ask({ type: 'counter.increment' });
    await hold.arrived;
    const stopping = system.stop();
    expect((await rejectionOf(counter('a').ask({ type: 'counter.read' }))).code).to.equal('SHUTTING_DOWN');
    hold.release();
    expect(await inFlight).to.deep.equal({ status: 'on', count: 1 });
    await stopping;
    expect(system.aliveCount).to.equal(0);
  });

  it('exposes actors alive, messages handled and decide time per kind', async () => {
    const registry = new Registry();
    const { system, counter } = counterSystem({ metrics: registry });
    await counter('a').ask({ type: 'counter.increment' });
    await counter('b').ask({ type: 'counter.read' });
    await rejectionOf(counter('b').ask({ type: 'counter.increment', by: 2000 }));
    await counter('b').ask({ type: 'counter.toggle' });
    await rejectionOf(counter('b').ask({ type: 'counter.increment' }));
    const text = await registry.metrics();
    expect(text).to.include('troupe_actors_alive{kind="counter"} 2');
    expect(text).to.include('troupe_actor_mailbox_depth{kind="counter"} 0');
    expect(text).to.include('troupe_actor_messages_total{kind="counter",outcome="accepted"} 2');
    expect(text).to.include('troupe_actor_messages_total{kind="counter",outcome="unchanged"} 1');
    expect(text).to.include('troupe_actor_messages_total{kind="counter",outcome="rejected"} 1');
    expect(text).to.include('troupe_actor_decide_seconds_count{kind="counter"} 4');
    await system.stop();
  });
});
