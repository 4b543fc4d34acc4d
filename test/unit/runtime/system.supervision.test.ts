// Invariant: a throw inside decide (a bug) answers the asker with INTERNAL at once, never a hang, and the
// behavior's supervision policy decides what happens next: resume keeps the in-memory state, restart reloads
// from the last snapshot at most maxRestarts times within the window and then stops, stop stops at once
// (messages queued behind hear ACTOR_STOPPED). A behavior whose initial state throws is stopped.
import { expect } from 'chai';
import type { ActorBehavior, Decision } from '../../../actors/runtime/machine.js';
import type { SupervisionPolicy } from '../../../actors/runtime/supervision.js';
import {
  counterBehavior, counterSystem, rejectionOf,
  type CounterEffect, type CounterMsg, type CounterReply, type CounterState,
} from './counter-machine.js';

/** The counter with a planted bug: incrementing past 2 throws. */
function buggyCounter(supervision: SupervisionPolicy): ActorBehavior<CounterState, CounterMsg, CounterReply, CounterEffect> {
  return {
    ...counterBehavior,
    supervision,
    machine: {
      ...counterBehavior.machine,
      decide(state, msg, ctx): Decision<CounterState, CounterEffect, CounterReply> {
        if (msg.type === 'counter.increment' && state.count >= 2) throw new Error('planted bug');
        return counterBehavior.machine.decide(state, msg, ctx);
      },
    },
  };
}

describe('actor runtime: supervision', () => {
  it('answers INTERNAL without detail when decide throws, and resume keeps serving the same state', async () => {
    const { system, store, counter, logs } = counterSystem({}, buggyCounter({ kind: 'resume' }));
    const ref = counter('a');
    await ref.ask({ type: 'counter.increment' });
    await ref.ask({ type: 'counter.increment' });
    const err = await rejectionOf(ref.ask({ type: 'counter.increment' }));
    expect(err).to.include({ code: 'INTERNAL' });
    expect(err.message).to.not.include('planted');
    expect(logs.some((l) => l.msg === 'decide threw')).to.equal(true);
    const loads = store.loads;
    expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 2 });
    expect(store.loads, 'resume does not reload').to.equal(loads);
    expect(system.isAlive('counter/a')).to.equal(true);
    await system.stop();
  });

  it('restart reloads from the snapshot, and stops after maxRestarts crashes inside the window', async () => {
    const { system, store, counter } = counterSystem({}, buggyCounter({ kind: 'restart', maxRestarts: 2, withinMs: 60_000 }));
    const ref = counter('a');
    await ref.ask({ type: 'counter.increment' });
    await ref.ask({ type: 'counter.increment' });
    for (let restart = 1; restart <= 2; restart += 1) {
      expect((await rejectionOf(ref.ask({ type: 'counter.increment' }))).code).to.equal('INTERNAL');
      expect(system.isAlive('counter/a'), `alive after restart ${restart}`).to.equal(true);
      const loads = store.loads;
      expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 2 });
      expect(store.loads, 'a restart rehydrates').to.equal(loads + 1);
    }
    expect((await rejectionOf(ref.ask({ type: 'counter.increment' }))).code).to.equal('INTERNAL');
    expect(system.isAlive('counter/a'), 'third crash in the window stops').to.equal(false);
    // Stopped is not lost: the next message starts a fresh incarnation from the snapshot.
    expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 2 });
    await system.stop();
  });

  it('stop policy stops at once and answers the queued messages with ACTOR_STOPPED', async () => {
    const { system, counter } = counterSystem({}, buggyCounter({ kind: 'stop' }));
    const ref = counter('a');
    await ref.ask({ type: 'counter.increment' });
    await ref.ask({ type: 'counter.increment' });
    // Both enqueue synchronously: the read waits in the mailbox behind the crashing increment.
    const crash = ref.ask({ type: 'counter.increment' });
    const queued = ref.ask({ type: 'counter.read' });
    expect((await rejectionOf(crash)).code).to.equal('INTERNAL');
    expect((await rejectionOf(queued)).code).to.equal('ACTOR_STOPPED');
    expect(system.isAlive('counter/a')).to.equal(false);
    expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 2 });
    await system.stop();
  });

  it('stops an actor whose initial state throws, whatever its policy', async () => {
    const { system, counter } = counterSystem({}, {
      ...counterBehavior, supervision: { kind: 'resume' }, initial: () => { throw new Error('cannot start'); },
    });
    expect((await rejectionOf(counter('a').ask({ type: 'counter.read' }))).code).to.equal('INTERNAL');
    expect(system.isAlive('counter/a')).to.equal(false);
    await system.stop();
  });
});
