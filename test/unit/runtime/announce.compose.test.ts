// Invariant: announcements added around a behaviour are delivered once per durable change — also for a change
// whose machine produced no effects — never for a turn that changed nothing; stacked wrappers each deliver their
// own, and the wrapped behaviour's afterPersist still runs and sees only its own effects.
import { expect } from 'chai';
import { withAnnouncement } from '../../../actors/runtime/announce.js';
import { counterBehavior, counterSystem, eventually, type CounterEffect, type CounterState } from './counter-machine.js';

describe('actor runtime: announcements', () => {
  it('delivers stacked announcements after each durable change and hides them from the wrapped behaviour', async () => {
    const delivered: string[] = [];
    const innerSaw: Array<readonly CounterEffect[]> = [];
    const inner = { ...counterBehavior, afterPersist: async (effects: readonly CounterEffect[]) => { innerSaw.push(effects); } };
    const statusChanges = withAnnouncement(inner, {
      effectType: 'test.status',
      announce: (previous: CounterState, next: CounterState) => (previous.status === next.status ? undefined : `status ${next.status}`),
      deliver: async (event: string) => { delivered.push(event); },
    });
    const everyChange = withAnnouncement(statusChanges, {
      effectType: 'test.change',
      announce: (_previous: CounterState, next: CounterState) => `count ${next.count}`,
      deliver: async (event: string) => { delivered.push(event); },
    });
    const { system, counter } = counterSystem({}, everyChange);
    const ref = counter('c');

    await ref.ask({ type: 'counter.toggle' }); // a change without machine effects
    await eventually(() => delivered.length === 2, 'both announcements of the toggle');
    expect(delivered).to.have.members(['status off', 'count 0']);
    await eventually(() => innerSaw.length === 1, 'the inner afterPersist of the toggle');
    expect(innerSaw[0]).to.deep.equal([]);

    await ref.ask({ type: 'counter.toggle' });
    await ref.ask({ type: 'counter.increment', by: 3 });
    await eventually(() => innerSaw.length === 3, 'the inner afterPersist of the increment');
    expect(innerSaw[2]).to.deep.equal([{ type: 'counter.incremented', count: 3 }]);

    const before = delivered.length;
    await ref.ask({ type: 'counter.read' }); // changes nothing
    await new Promise((resolve) => setImmediate(resolve));
    expect(delivered.length).to.equal(before);
    expect(delivered.filter((d) => d.startsWith('status'))).to.deep.equal(['status off', 'status on']);
    await system.stop();
  });

  it('never fails the turn when delivery fails', async () => {
    const failing = withAnnouncement(counterBehavior, {
      effectType: 'test.failing',
      announce: () => 'x',
      deliver: async () => { throw new Error('broker down'); },
    });
    const { system, counter } = counterSystem({}, failing);
    expect(await counter('c').ask({ type: 'counter.increment' })).to.deep.equal({ status: 'on', count: 1 });
    await system.stop();
  });
});
