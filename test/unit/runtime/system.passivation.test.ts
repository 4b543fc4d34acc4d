// Invariant: an actor idle for passivateAfterMs (or its kind's override) leaves memory; its state is already
// durable, so the next message rehydrates it unchanged. Activity restarts the idle clock. passivate and
// passivateAll wait for queued messages and pending effects to finish before the actor goes.
import { expect } from 'chai';
import sinon from 'sinon';
import { counterBehavior, counterSystem, eventually, type CounterEffect } from './counter-machine.js';

describe('actor runtime: passivation', () => {
  let clock: sinon.SinonFakeTimers;
  // Only timers are faked: nact schedules mailbox turns with setImmediate, which must keep running.
  beforeEach(() => { clock = sinon.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }); });
  afterEach(() => clock.restore());

  it('passivates after the idle time, not before, and rehydrates on the next message', async () => {
    const { system, store, counter } = counterSystem({ passivateAfterMs: 60_000 });
    await counter('a').ask({ type: 'counter.increment', by: 7 });
    await clock.tickAsync(59_999);
    expect(system.isAlive('counter/a')).to.equal(true);
    await clock.tickAsync(1);
    expect(system.isAlive('counter/a')).to.equal(false);
    const loads = store.loads;
    expect(await counter('a').ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 7 });
    expect(store.loads).to.equal(loads + 1);
    await system.stop();
  });

  it('restarts the idle clock on every message', async () => {
    const { system, counter } = counterSystem({ passivateAfterMs: 1_000 });
    await counter('a').ask({ type: 'counter.increment' });
    await clock.tickAsync(900);
    await counter('a').ask({ type: 'counter.read' });
    await clock.tickAsync(900);
    expect(system.isAlive('counter/a')).to.equal(true);
    await clock.tickAsync(100);
    expect(system.isAlive('counter/a')).to.equal(false);
    await system.stop();
  });

  it('honours a per-kind idle time', async () => {
    const { system, counter } = counterSystem({ passivateAfterMs: 60_000 }, { ...counterBehavior, passivateAfterMs: 5_000 });
    await counter('a').ask({ type: 'counter.increment' });
    await clock.tickAsync(5_000);
    expect(system.isAlive('counter/a')).to.equal(false);
    await system.stop();
  });

  it('passivate waits for the mailbox to drain; the queued command is answered and durable', async () => {
    const { system, store, counter } = counterSystem();
    const hold = store.holdSaves();
    const inFlight = counter('a').ask({ type: 'counter.increment' });
    await hold.arrived;
    const queued = counter('a').ask({ type: 'counter.increment' });
    let passivated = false;
    const passivating = system.passivate('counter/a').then(() => { passivated = true; });
    for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    expect(passivated).to.equal(false);
    hold.release();
    expect(await inFlight).to.deep.equal({ status: 'on', count: 1 });
    expect(await queued).to.deep.equal({ status: 'on', count: 2 });
    await passivating;
    expect(system.isAlive('counter/a')).to.equal(false);
    expect(store.stored('counter/a')?.state).to.deep.equal({ status: 'on', count: 2 });
    await system.stop();
  });

  it('passivate waits for pending effects', async () => {
    let finishEffect!: () => void;
    const effectDone = new Promise<void>((resolve) => { finishEffect = resolve; });
    let effectStarted = false;
    const { system, counter } = counterSystem({}, {
      ...counterBehavior,
      async afterPersist(_effects: readonly CounterEffect[]) { effectStarted = true; await effectDone; },
    });
    await counter('a').ask({ type: 'counter.increment' });
    await eventually(() => effectStarted, 'effect started');
    let passivated = false;
    const passivating = system.passivate('counter/a').then(() => { passivated = true; });
    for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    expect(passivated).to.equal(false);
    finishEffect();
    await passivating;
    expect(system.isAlive('counter/a')).to.equal(false);
    await system.stop();
  });

  it('passivateAll empties the node and loses nothing', async () => {
    const { system, store, counter } = counterSystem();
    const ids = Array.from({ length: 20 }, (_, i) => `n${i}`);
    await Promise.all(ids.map((id, i) => counter(id).ask({ type: 'counter.increment', by: i + 1 })));
    expect(system.aliveCount).to.equal(20);
    await system.passivateAll();
    expect(system.aliveCount).to.equal(0);
    for (const [i, id] of ids.entries()) expect(store.stored(`counter/${id}`)?.state).to.deep.equal({ status: 'on', count: i + 1 });
    expect(await counter('n3').ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 4 });
    await system.stop();
  });
});
