// Invariant: a machine defined as a table answers every status × message pair: a pair in the table is accepted and
// lands in one of the statuses the table lists (each of them reached); any other pair is an explicit
// ILLEGAL_TRANSITION rejection that leaves the state as it was; a decide that leaves its table fails the harness.
// The harness enforces that messages, replies and states survive JSON.
import { expect } from 'chai';
import { accept } from '../../../actors/runtime/machine.js';
import { runCommand } from '../../support/harness.js';
import { walkTable } from '../../support/table-walk.js';
import { counterBehavior, counterMessages, type CounterState } from './counter-machine.js';

walkTable(counterBehavior, {
  title: 'counter machine (runtime test fixture): every status × message pair, from its table',
  statesIn: (status) => [{ status: status as CounterState['status'], count: 5 }],
  messagesOf: (type) => counterMessages.filter((m) => m.type === type),
  refusedWith: () => 'ILLEGAL_TRANSITION',
});

describe('counter machine (runtime test fixture)', () => {
  it('increments by the requested step and emits the new count as an effect', () => {
    const result = runCommand(counterBehavior, { status: 'on', count: 5 }, { type: 'counter.increment', by: 3 });
    expect(result).to.deep.include({ ok: true, reply: { status: 'on', count: 8 }, state: { status: 'on', count: 8 }, changed: true });
    if (result.ok) expect(result.effects).to.deep.equal([{ type: 'counter.incremented', count: 8 }]);
  });

  it('read changes nothing (the runtime skips the write)', () => {
    const result = runCommand(counterBehavior, { status: 'off', count: 1 }, { type: 'counter.read' });
    expect(result).to.deep.include({ ok: true, changed: false });
  });

  it('rejects malformed input through its message schema with VALIDATION_FAILED', () => {
    for (const bad of [{ type: 'counter.increment', by: 0 }, { type: 'counter.increment', by: 1.5 }, { type: 'counter.increment', by: '1' }, { type: 'nope' }, { kind: 'x' }]) {
      const result = runCommand(counterBehavior, { status: 'on', count: 0 }, bad);
      expect(result.ok, JSON.stringify(bad)).to.equal(false);
      if (!result.ok) expect(result.rejection.code).to.equal('VALIDATION_FAILED');
    }
  });

  it('the harness fails a decide that moves to a status its table does not list, as the runtime refuses it', () => {
    const broken = {
      ...counterBehavior,
      machine: { ...counterBehavior.machine, decide: (state: CounterState) => accept<CounterState, never, CounterState>({ ...state, status: 'off' }, state) },
    };
    expect(() => runCommand(broken, { status: 'on', count: 0 }, { type: 'counter.increment' })).to.throw(/counter\.increment moved on to off/);
  });

  it('the harness refuses a state that would not survive the snapshot table', () => {
    const withDate = { status: 'on', count: 0, at: new Date(0) } as unknown as CounterState;
    expect(() => runCommand(counterBehavior, withDate, { type: 'counter.read' })).to.throw(/JSON round trip/);
  });
});
