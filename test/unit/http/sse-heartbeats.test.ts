/** Every open stream hears a keep-alive once per period from one shared timer, spread over the period. */
import { expect } from 'chai';
import sinon from 'sinon';
import { HeartbeatWheel, type Beating } from '../../../http/sse-heartbeats.js';

function stream(log: number[], id: number): Beating {
  return { heartbeatSlot: -1, beat: () => log.push(id) };
}

describe('SSE heartbeat wheel', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => { clock = sinon.useFakeTimers(); });
  afterEach(() => clock.restore());

  it('beats each stream once per period, never all streams in the same tick', () => {
    const wheel = new HeartbeatWheel(15_000);
    const beats: number[] = [];
    const streams = Array.from({ length: 30 }, (_, i) => stream(beats, i));
    for (const s of streams) wheel.add(s);
    clock.tick(15_000);
    expect([...beats].sort((a, b) => a - b)).to.deep.equal(streams.map((_, i) => i));
    beats.length = 0;
    clock.tick(1_000); // one slot of fifteen
    expect(beats.length).to.equal(2);
    clock.tick(14_000);
    expect(beats.length).to.equal(30);
  });

  it('stops beating a removed stream, and stops its timer when the last one leaves', () => {
    const wheel = new HeartbeatWheel(1_500);
    const beats: number[] = [];
    const a = stream(beats, 1);
    const b = stream(beats, 2);
    wheel.add(a);
    wheel.add(b);
    wheel.remove(a);
    clock.tick(1_500);
    expect(beats).to.deep.equal([2]);
    wheel.remove(b);
    wheel.remove(b); // twice is harmless
    expect(clock.countTimers()).to.equal(0);
    wheel.add(a);
    clock.tick(1_500);
    expect(beats).to.deep.equal([2, 1]);
  });
});
