/**
 * Invariant: a holder keeps routed asks to an address on the queue exactly while an ask to it that the holder
 * forwarded has not come back from the queue, and forgets those it can no longer see come back.
 */
import { expect } from 'chai';
import { ForwardedAsks } from '../../../transport/amqp/forwarded-asks.js';

describe('ForwardedAsks', () => {
  it('waits for an address until every ask forwarded to it is back', () => {
    const forwarded = new ForwardedAsks();
    expect(forwarded.waitingFor('a/1')).to.equal(false);
    forwarded.add('x', 'a/1', 0);
    forwarded.add('y', 'a/1', 0);
    forwarded.add('y', 'a/1', 0); // the same ask twice counts once
    forwarded.done('x');
    expect(forwarded.waitingFor('a/1')).to.equal(true);
    forwarded.done('y');
    expect(forwarded.waitingFor('a/1')).to.equal(false);
    forwarded.done('y');
    expect(forwarded.waitingFor('a/1')).to.equal(false);
  });

  it("drops a shard's forwarded asks when the shard is lost or handed over, and everything with the connection", () => {
    const forwarded = new ForwardedAsks();
    forwarded.add('x', 'a/1', 0);
    forwarded.add('y', 'b/1', 1);
    forwarded.dropShard(0);
    expect(forwarded.waitingFor('a/1')).to.equal(false);
    expect(forwarded.waitingFor('b/1')).to.equal(true);
    forwarded.dropAll();
    expect(forwarded.waitingFor('b/1')).to.equal(false);
  });
});
