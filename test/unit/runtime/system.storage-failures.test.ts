// Invariant: a failed write never advances the actor. Storage down → the caller hears STORAGE_UNAVAILABLE and
// the in-memory state stays where the store is. A stale version (another owner wrote) → the caller hears
// STORAGE_STALE_VERSION, the actor stops, messages queued behind it hear ACTOR_STOPPED, and the next message
// rehydrates from the store, seeing the other owner's state.
import { expect } from 'chai';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { counterBehavior, counterSystem, rejectionOf } from './counter-machine.js';

describe('actor runtime: storage failures', () => {
  it('save failure answers STORAGE_UNAVAILABLE and leaves the state unchanged', async () => {
    const { system, store, counter } = counterSystem();
    const ref = counter('a');
    await ref.ask({ type: 'counter.increment' });
    store.failSavesWith(new TroupeError('STORAGE_UNAVAILABLE', undefined, { cause: 'ECONNRESET' }));
    const err = await rejectionOf(ref.ask({ type: 'counter.increment' }));
    expect(err).to.be.instanceOf(TroupeError);
    expect(err).to.include({ code: 'STORAGE_UNAVAILABLE', retryable: true });
    store.failSavesWith(undefined);
    expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 1 });
    expect(await ref.ask({ type: 'counter.increment' })).to.deep.equal({ status: 'on', count: 2 });
    expect(store.stored('counter/a')).to.deep.equal({ version: 2, state: { status: 'on', count: 2 } });
    await system.stop();
  });

  it('a write whose commit outcome was unknown is read back before the next message, so its retry is not stale (issue 30)', async () => {
    const effectsRun: number[] = [];
    const { system, store, counter, logs } = counterSystem({}, {
      ...counterBehavior,
      async afterPersist(effects) { for (const e of effects) effectsRun.push(e.count); },
    });
    const ref = counter('a');
    await ref.ask({ type: 'counter.increment' });
    store.loseCommitRepliesWith(new TroupeError('STORAGE_UNAVAILABLE', undefined, { cause: 'connection terminated during COMMIT' }));
    expect((await rejectionOf(ref.ask({ type: 'counter.increment', by: 5 }))).code).to.equal('STORAGE_UNAVAILABLE');
    store.loseCommitRepliesWith(undefined);
    expect(store.stored('counter/a')).to.deep.equal({ version: 2, state: { status: 'on', count: 6 } });
    // The next message sees the committed write, not the state before it: no stale version, no stop.
    expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 6 });
    expect(await ref.ask({ type: 'counter.increment' })).to.deep.equal({ status: 'on', count: 7 });
    expect(system.isAlive('counter/a')).to.equal(true);
    expect(logs.some((l) => l.msg === 'snapshot written by another owner; stopping')).to.equal(false);
    // Recognised as this node's own write: its effects ran once (announcements to live streams are effects too).
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(effectsRun).to.deep.equal([1, 6, 7]);
    await system.stop();
  });

  it("an unknown outcome that did not commit, or that another owner's write replaced, runs none of its effects", async () => {
    const effectsRun: number[] = [];
    const { system, store, counter } = counterSystem({}, {
      ...counterBehavior,
      async afterPersist(effects) { for (const e of effects) effectsRun.push(e.count); },
    });
    const ref = counter('a');
    await ref.ask({ type: 'counter.increment' });
    store.failSavesWith(new TroupeError('STORAGE_UNAVAILABLE'));
    await rejectionOf(ref.ask({ type: 'counter.increment', by: 5 }));
    store.failSavesWith(undefined);
    expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 1 });
    store.loseCommitRepliesWith(new TroupeError('STORAGE_UNAVAILABLE'));
    await rejectionOf(ref.ask({ type: 'counter.increment', by: 5 }));
    store.loseCommitRepliesWith(undefined);
    store.writeAsAnotherOwner('counter/a', { status: 'on', count: 6 });
    await ref.ask({ type: 'counter.read' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(effectsRun).to.deep.equal([1]);
    await system.stop();
  });

  it('an unclassified store error answers INTERNAL without its text, logs it, and changes nothing', async () => {
    const { system, store, counter, logs } = counterSystem();
    store.failSavesWith(new Error('duplicate key value violates unique constraint "orgs_slug"'));
    const err = await rejectionOf(counter('a').ask({ type: 'counter.increment' }));
    expect(err).to.include({ code: 'INTERNAL' });
    expect(err.message).to.not.include('duplicate key');
    expect(logs.some((l) => l.msg === 'snapshot store failed')).to.equal(true);
    store.failSavesWith(undefined);
    expect(await counter('a').ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 0 });
    expect(system.isAlive('counter/a'), 'a failed write is not a crash').to.equal(true);
    await system.stop();
  });

  it('passes a TroupeError from the store or a projection through unchanged, state not advanced', async () => {
    const { system, store, counter } = counterSystem();
    store.failSavesWith(new TroupeError('ALREADY_EXISTS', 'slug taken'));
    const err = await rejectionOf(counter('a').ask({ type: 'counter.increment' }));
    expect(err).to.include({ code: 'ALREADY_EXISTS', message: 'slug taken' });
    store.failSavesWith(undefined);
    expect(await counter('a').ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 0 });
    await system.stop();
  });

  it('load failure answers STORAGE_UNAVAILABLE and the next message loads again', async () => {
    const { system, store, counter } = counterSystem();
    store.writeAsAnotherOwner('counter/a', { status: 'off', count: 41 });
    store.failLoadsWith(new TroupeError('STORAGE_UNAVAILABLE'));
    expect((await rejectionOf(counter('a').ask({ type: 'counter.read' }))).code).to.equal('STORAGE_UNAVAILABLE');
    store.failLoadsWith(undefined);
    expect(await counter('a').ask({ type: 'counter.read' })).to.deep.equal({ status: 'off', count: 41 });
    await system.stop();
  });

  it('stale version stops the actor, fails the queue behind it, and the next message rehydrates', async () => {
    const { system, store, counter } = counterSystem();
    const ref = counter('a');
    await ref.ask({ type: 'counter.increment' });
    expect(system.isAlive('counter/a')).to.equal(true);
    // Another node took the actor over and wrote twice.
    store.writeAsAnotherOwner('counter/a', { status: 'on', count: 100 });
    store.writeAsAnotherOwner('counter/a', { status: 'on', count: 101 });

    const hold = store.holdSaves();
    const first = ref.ask({ type: 'counter.increment' });
    await hold.arrived;
    const queued = [ref.ask({ type: 'counter.increment' }), ref.ask({ type: 'counter.read' })];
    hold.release();

    expect((await rejectionOf(first)).code).to.equal('STORAGE_STALE_VERSION');
    for (const behind of queued) expect((await rejectionOf(behind)).code).to.equal('ACTOR_STOPPED');
    expect(system.isAlive('counter/a')).to.equal(false);
    expect(store.stored('counter/a')).to.deep.equal({ version: 3, state: { status: 'on', count: 101 } });

    const loadsBefore = store.loads;
    expect(await ref.ask({ type: 'counter.increment' })).to.deep.equal({ status: 'on', count: 102 });
    expect(store.loads).to.equal(loadsBefore + 1);
    expect(store.stored('counter/a')).to.deep.equal({ version: 4, state: { status: 'on', count: 102 } });
    await system.stop();
  });
});
