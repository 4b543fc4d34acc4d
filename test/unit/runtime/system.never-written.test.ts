// Invariant (decision 0055): a message its behaviour says names a never-written address starts the actor from its
// initial state without reading the store; when that guess is wrong (the address was written), no reply is decided on
// the guessed state: the version fence refuses the write and the message is decided again on what is stored.
import { expect } from 'chai';
import { counterBehavior, counterSystem, rejectionOf } from './counter-machine.js';

const guessing = { ...counterBehavior, neverWritten: () => true };

describe('actor runtime: messages for addresses never written', () => {
  it('starts from the initial state without a read when the guess holds', async () => {
    const { system, store, counter } = counterSystem({}, guessing);
    expect(await counter('a').ask({ type: 'counter.increment', by: 3 })).to.deep.equal({ status: 'on', count: 3 });
    expect(store.loads).to.equal(0);
    expect(store.stored('counter/a')).to.deep.equal({ version: 1, state: { status: 'on', count: 3 } });
    await system.stop();
  });

  it('decides a change again on the stored state when the address had been written', async () => {
    const { system, store, counter } = counterSystem({}, guessing);
    await store.save('counter/b', 0, { status: 'on', count: 5 });
    expect(await counter('b').ask({ type: 'counter.increment' })).to.deep.equal({ status: 'on', count: 6 });
    expect(store.loads).to.equal(1);
    expect(store.stored('counter/b')).to.deep.equal({ version: 2, state: { status: 'on', count: 6 } });
    expect(system.isAlive('counter/b')).to.equal(true);
    await system.stop();
  });

  it('answers a read or a refusal from the stored state, never from the guess', async () => {
    const { system, store, counter } = counterSystem({}, guessing);
    await store.save('counter/c', 0, { status: 'on', count: 7 });
    expect(await counter('c').ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 7 });
    await store.save('counter/d', 0, { status: 'off', count: 1 });
    expect(await rejectionOf(counter('d').ask({ type: 'counter.increment' }))).to.include({ code: 'ILLEGAL_TRANSITION' });
    expect(store.stored('counter/d')).to.deep.equal({ version: 1, state: { status: 'off', count: 1 } });
    await system.stop();
  });
});
