// Invariant: an actor answers a command only after its new state is durable, and runs the command's effects
// only after answering; a failing effect is logged and never turns an answered success into an error.
import { expect } from 'chai';
import { counterBehavior, counterSystem, eventually, type CounterEffect } from './counter-machine.js';

describe('actor runtime: persist, then reply, then effects', () => {
  it('does not resolve the reply while the snapshot write is still open', async () => {
    const { system, store, counter } = counterSystem();
    const hold = store.holdSaves();
    let replied = false;
    const reply = counter('a').ask({ type: 'counter.increment' }).then((r) => { replied = true; return r; });
    await hold.arrived;
    // Give the runtime every chance to answer early: many turns of the event loop with the write parked.
    for (let turn = 0; turn < 50; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    expect(replied).to.equal(false);
    expect(store.stored('counter/a')).to.equal(undefined);
    hold.release();
    expect(await reply).to.deep.equal({ status: 'on', count: 1 });
    expect(store.stored('counter/a')).to.deep.equal({ version: 1, state: { status: 'on', count: 1 } });
    await system.stop();
  });

  it('writes nothing for a reply that leaves the state as it was', async () => {
    const { system, store, counter } = counterSystem();
    expect(await counter('a').ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 0 });
    expect(store.saves).to.equal(0);
    await system.stop();
  });

  it('runs effects after the reply, in order, and logs (not replies) an effect failure', async () => {
    const order: string[] = [];
    const { system, counter, logs } = counterSystem({}, {
      ...counterBehavior,
      async afterPersist(effects: readonly CounterEffect[]) {
        for (const effect of effects) order.push(`effect ${effect.count}`);
        if (effects.some((e) => e.count === 2)) throw new Error('downstream refused');
      },
    });
    const ref = counter('a');
    await ref.ask({ type: 'counter.increment' }).then(() => order.push('reply 1'));
    await ref.ask({ type: 'counter.increment' }).then(() => order.push('reply 2'));
    expect(await ref.ask({ type: 'counter.increment' })).to.deep.equal({ status: 'on', count: 3 });
    await eventually(() => order.includes('effect 3'), 'third effect');
    expect(order.indexOf('reply 1')).to.be.lessThan(order.indexOf('effect 1'));
    expect(order.filter((o) => o.startsWith('effect'))).to.deep.equal(['effect 1', 'effect 2', 'effect 3']);
    expect(logs.some((l) => l.msg === 'afterPersist failed' && l.actorId === 'a')).to.equal(true);
    await system.stop();
  });

  it('logs each state change at debug with actor kind, id, message type and the status move', async () => {
    const { system, counter, logs } = counterSystem();
    await counter('a').ask({ type: 'counter.toggle' });
    const line = logs.find((l) => l.msg === 'state changed');
    expect(line).to.deep.include({ level: 20, actorKind: 'counter', actorId: 'a', msgType: 'counter.toggle', from: 'on', to: 'off', fromVersion: 0, toVersion: 1 });
    await system.stop();
  });

  it('offers the behavior projection to the store inside the write', async () => {
    const projected: number[] = [];
    const { system, store, counter } = counterSystem({}, { ...counterBehavior, project: async (_trx, _id, next) => { projected.push(next.count); } });
    await counter('a').ask({ type: 'counter.increment' });
    // The memory store has no transaction to run it in; it records that the runtime handed one over.
    expect(store.projectionsOffered).to.equal(1);
    await system.stop();
  });
});
