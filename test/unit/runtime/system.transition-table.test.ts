// Invariant: the runtime saves a new state only when its status is one the machine's table lists for the status
// and message it came from. A decide that contradicts its own table is refused: the asker hears INTERNAL, nothing
// is written, no effect runs, and the actor keeps serving the state it had.
import { expect } from 'chai';
import { accept, type ActorBehavior } from '../../../actors/runtime/machine.js';
import {
  counterBehavior, counterSystem, rejectionOf,
  type CounterEffect, type CounterMsg, type CounterReply, type CounterState,
} from './counter-machine.js';

/**
 * The counter with a planted bug: an increment also switches it off, although its table lets `counter.increment`
 * lead only to `on`; and a toggle while off leaves the status alone, although the table sends it to `on`.
 */
function tableBreakingCounter(effectsRun: number[]): ActorBehavior<CounterState, CounterMsg, CounterReply, CounterEffect> {
  return {
    ...counterBehavior,
    machine: {
      ...counterBehavior.machine,
      decide(state, msg, ctx) {
        if (msg.type === 'counter.increment' && state.count >= 1) {
          const next: CounterState = { status: 'off', count: state.count + 1 };
          return accept(next, { status: next.status, count: next.count }, [{ type: 'counter.incremented', count: next.count }]);
        }
        if (msg.type === 'counter.toggle' && state.status === 'off') {
          const next: CounterState = { status: 'off', count: state.count + 100 };
          return accept(next, { status: next.status, count: next.count });
        }
        return counterBehavior.machine.decide(state, msg, ctx);
      },
    },
    async afterPersist(effects) {
      for (const effect of effects) effectsRun.push(effect.count);
    },
  };
}

describe('actor runtime: the transition table gates every change', () => {
  it('refuses a next status the table does not list: INTERNAL, nothing saved, state and actor kept', async () => {
    const effectsRun: number[] = [];
    const { system, store, counter, logs } = counterSystem({}, tableBreakingCounter(effectsRun));
    const ref = counter('a');
    expect(await ref.ask({ type: 'counter.increment' })).to.deep.equal({ status: 'on', count: 1 });
    expect(store.stored('counter/a')).to.deep.equal({ version: 1, state: { status: 'on', count: 1 } });

    const err = await rejectionOf(ref.ask({ type: 'counter.increment' }));
    expect(err).to.include({ code: 'INTERNAL' });
    expect(store.saves, 'the refused state is never offered to the store').to.equal(1);
    expect(store.stored('counter/a')).to.deep.equal({ version: 1, state: { status: 'on', count: 1 } });
    expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 1 });
    expect(system.isAlive('counter/a')).to.equal(true);
    const line = logs.find((l) => l.msg === 'decide left its transition table; nothing saved');
    expect(line).to.deep.include({ level: 50, actorKind: 'counter', actorId: 'a', msgType: 'counter.increment', from: 'on', to: 'off' });
    // Let any effect that was (wrongly) scheduled run before looking.
    await new Promise((resolve) => setImmediate(resolve));
    expect(effectsRun, 'only the permitted change ran its effect').to.deep.equal([1]);
    await system.stop();
  });

  it('refuses a change that keeps a status the table moves away from', async () => {
    const { system, store, counter } = counterSystem({}, tableBreakingCounter([]));
    const ref = counter('b');
    expect(await ref.ask({ type: 'counter.toggle' })).to.deep.equal({ status: 'off', count: 0 });
    expect(await rejectionOf(ref.ask({ type: 'counter.toggle' }))).to.include({ code: 'INTERNAL' });
    expect(store.stored('counter/b')).to.deep.equal({ version: 1, state: { status: 'off', count: 0 } });
    await system.stop();
  });

  it('a told message that breaks the table is logged and changes nothing', async () => {
    const { system, store, counter, logs } = counterSystem({}, tableBreakingCounter([]));
    const ref = counter('c');
    await ref.ask({ type: 'counter.increment' });
    ref.tell({ type: 'counter.increment' });
    expect(await ref.ask({ type: 'counter.read' })).to.deep.equal({ status: 'on', count: 1 });
    expect(store.stored('counter/c')?.version).to.equal(1);
    expect(logs.some((l) => l.msg === 'told message failed' && l.code === 'INTERNAL')).to.equal(true);
    await system.stop();
  });
});
