// Invariant: a machine declared as a TransitionTable answers every status × message pair: a pair in the table
// is accepted and lands in one of the statuses the table lists; any other pair is an explicit ILLEGAL_TRANSITION
// rejection that leaves the state as it was. The harness enforces that messages, replies and states survive JSON.
import { expect } from 'chai';
import { accept } from '../../../actors/runtime/machine.js';
import { runCommand } from '../../support/harness.js';
import { counterBehavior, counterMachine, counterMessages, type CounterState } from './counter-machine.js';

describe('counter machine (runtime test fixture)', () => {
  for (const status of counterMachine.statuses) {
    for (const message of counterMessages) {
      const allowed = counterMachine.transitions[status][message.type];
      it(`${status} × ${message.type} → ${allowed === undefined ? 'rejected' : allowed.join('|')}`, () => {
        const state: CounterState = { status, count: 5 };
        const result = runCommand(counterBehavior, state, message);
        if (allowed === undefined) {
          expect(result.ok).to.equal(false);
          if (result.ok) return;
          expect(result.rejection.code).to.equal('ILLEGAL_TRANSITION');
          expect(result.state).to.deep.equal(state);
        } else {
          expect(result.ok).to.equal(true);
          if (!result.ok) return;
          expect(allowed).to.include(result.state.status);
        }
      });
    }
  }

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
