/**
 * Invariant: a holder keeps routed asks to an address on the queue exactly while an ask to it that the holder
 * forwarded has not come back from the queue, and forgets those it can no longer see come back.
 */
import { expect } from 'chai';
import { ForwardedAsks } from '../../../transport/amqp/forwarded-asks.js';

// A day ahead: the file loads long before its tests run on a busy machine, and a minute ran out there.
const FAR = Date.now() + 86_400_000;

describe('ForwardedAsks', () => {
  it('waits for an address until every ask forwarded to it is back', () => {
    const forwarded = new ForwardedAsks();
    expect(forwarded.waitingFor('a/1')).to.equal(false);
    forwarded.add('x', 'a/1', 0, FAR);
    forwarded.add('y', 'a/1', 0, FAR);
    forwarded.add('y', 'a/1', 0, FAR); // the same ask twice counts once
    forwarded.done('x');
    expect(forwarded.waitingFor('a/1')).to.equal(true);
    forwarded.done('y');
    expect(forwarded.waitingFor('a/1')).to.equal(false);
    forwarded.done('y');
    expect(forwarded.waitingFor('a/1')).to.equal(false);
  });

  it("drops a shard's forwarded asks when the shard is lost or handed over, and everything with the connection", () => {
    const forwarded = new ForwardedAsks();
    forwarded.add('x', 'a/1', 0, FAR);
    forwarded.add('y', 'b/1', 1, FAR);
    forwarded.dropShard(0);
    expect(forwarded.waitingFor('a/1')).to.equal(false);
    expect(forwarded.waitingFor('b/1')).to.equal(true);
    forwarded.dropAll();
    expect(forwarded.waitingFor('b/1')).to.equal(false);
  });

  it("stops waiting at the latest deadline of an address's forwarded asks: an ask that never comes back ends then", () => {
    const forwarded = new ForwardedAsks();
    forwarded.add('x', 'a/1', 0, 1_000);
    forwarded.add('y', 'a/1', 0, 2_000);
    expect(forwarded.waitingFor('a/1', 1_500)).to.equal(true);
    expect(forwarded.waitingFor('a/1', 2_001)).to.equal(false);
    forwarded.add('z', 'a/1', 0, 5_000);
    forwarded.done('x'); // an expired mark that was dropped stays dropped
    expect(forwarded.waitingFor('a/1', 3_000)).to.equal(true);
    forwarded.done('z');
    expect(forwarded.waitingFor('a/1', 3_000)).to.equal(false);
  });
});
