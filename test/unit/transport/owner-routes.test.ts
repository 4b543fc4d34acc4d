/**
 * Invariant: an ask takes a holder's inbox only when that cannot change what the shard queue would have done. A
 * shard's holder is only known from a reply naming another node (never this one); an address with asks outstanding
 * stays on their route until the last of them settles; after a tell to a shard, asks to it take the queue until
 * one carrying a tell mark that covers every tell sent has been answered; a tell waiting for an address's routed
 * asks is released when they settle or move to the queue; and forgetting holders names the inboxes forgotten.
 */
import { expect } from 'chai';
import { OwnerRoutes, QUEUE_ROUTE, type ShardHolder } from '../../../transport/amqp/owner-routes.js';

const SELF = 'node-self';
const B: ShardHolder = { nodeId: 'node-b', inbox: 'troupe.inbox.node-b.aaaa' };
const C: ShardHolder = { nodeId: 'node-c', inbox: 'troupe.inbox.node-c.cccc' };

/** Whether `promise` has settled once pending callbacks have run. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true), () => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe('OwnerRoutes', () => {
  it('routes through the queue while a shard has no known holder', () => {
    const routes = new OwnerRoutes(SELF);
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    expect(routes.holderOf(0)).to.equal(undefined);
    // A reply that names no inbox teaches nothing.
    routes.answered(0, undefined);
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
  });

  it("routes a shard's asks to the inbox of the node that answered one, and only that shard's", () => {
    const routes = new OwnerRoutes(SELF);
    routes.answered(1, B);
    expect(routes.route(1, 'a/1')).to.equal(B.inbox);
    expect(routes.route(1, 'a/2')).to.equal(B.inbox);
    expect(routes.holderOf(1)).to.deep.equal(B);
    expect(routes.route(2, 'a/3')).to.equal(QUEUE_ROUTE);

    // A later answer from another node replaces the holder; one naming no inbox leaves it as it was.
    routes.answered(1, C);
    expect(routes.route(1, 'a/1')).to.equal(C.inbox);
    routes.answered(1, undefined);
    expect(routes.route(1, 'a/1')).to.equal(C.inbox);
  });

  it('never routes to itself, and an answer from itself forgets the holder it knew', () => {
    const routes = new OwnerRoutes(SELF);
    routes.answered(0, { nodeId: SELF, inbox: 'troupe.inbox.node-self.ffff' });
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    expect(routes.holderOf(0)).to.equal(undefined);

    routes.answered(0, B);
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);
    routes.answered(0, { nodeId: SELF, inbox: 'troupe.inbox.node-self.ffff' });
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    expect(routes.holderOf(0)).to.equal(undefined);
  });

  it('pins an address with asks outstanding through the queue to the queue until the last one settles', () => {
    const routes = new OwnerRoutes(SELF);
    routes.sent('a/1', routes.route(0, 'a/1'));
    routes.sent('a/1', routes.route(0, 'a/1'));
    // Another address's answer names the holder: new addresses take the inbox, the pinned one does not.
    routes.answered(0, B);
    expect(routes.route(0, 'a/2')).to.equal(B.inbox);
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    expect(routes.hasRoutedAsks('a/1')).to.equal(false);

    routes.settled('a/1');
    expect(routes.route(0, 'a/1'), 'one ask still outstanding').to.equal(QUEUE_ROUTE);
    routes.settled('a/1');
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);
    // A settle with nothing outstanding changes nothing.
    routes.settled('a/1');
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);
  });

  it('pins an address with routed asks outstanding to their inbox even after the holder changes', () => {
    const routes = new OwnerRoutes(SELF);
    routes.answered(0, B);
    routes.sent('a/1', routes.route(0, 'a/1'));
    expect(routes.hasRoutedAsks('a/1')).to.equal(true);
    routes.answered(0, C);
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);
    expect(routes.route(0, 'a/2')).to.equal(C.inbox);
    routes.sent('a/1', routes.route(0, 'a/1'));

    routes.settled('a/1');
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);
    expect(routes.hasRoutedAsks('a/1')).to.equal(true);
    routes.settled('a/1');
    expect(routes.route(0, 'a/1')).to.equal(C.inbox);
    expect(routes.hasRoutedAsks('a/1')).to.equal(false);
  });

  it('keeps a shard on the queue after a tell until an ask whose mark covers every tell sent is answered', () => {
    const routes = new OwnerRoutes(SELF);
    routes.answered(0, B);
    routes.answered(1, B);
    expect(routes.tellMark(0)).to.equal(0);

    routes.tellSent(0);
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    expect(routes.route(1, 'b/1'), 'another shard is not held back').to.equal(B.inbox);
    const firstMark = routes.tellMark(0);
    expect(firstMark).to.equal(1);

    routes.tellSent(0);
    expect(routes.tellMark(0)).to.equal(2);
    // A routed answer (no mark) and a queue answer sent between the two tells prove nothing about the second.
    routes.answered(0, B);
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    routes.answered(0, B, firstMark);
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    routes.answered(0, B, 2);
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);
    // An older mark arriving late does not undo a newer one.
    routes.answered(0, B, 0);
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);
  });

  it('takes a tell mark even from an answer that names no holder, and routes once the holder is known', () => {
    const routes = new OwnerRoutes(SELF);
    routes.tellSent(3);
    routes.answered(3, undefined, routes.tellMark(3));
    expect(routes.route(3, 'a/1')).to.equal(QUEUE_ROUTE);
    routes.answered(3, B);
    expect(routes.route(3, 'a/1')).to.equal(B.inbox);
  });

  it('lets a tell wait for the routed asks of its address: offInboxes resolves when the last one settles', async () => {
    const routes = new OwnerRoutes(SELF);
    expect(routes.offInboxes('a/1'), 'nothing outstanding').to.equal(undefined);
    routes.sent('a/1', QUEUE_ROUTE);
    expect(routes.offInboxes('a/1'), 'outstanding through the queue only').to.equal(undefined);
    routes.settled('a/1');

    routes.answered(0, B);
    routes.sent('a/1', routes.route(0, 'a/1'));
    routes.sent('a/1', routes.route(0, 'a/1'));
    const first = routes.offInboxes('a/1')!;
    const second = routes.offInboxes('a/1')!;
    expect(first).to.be.instanceOf(Promise);
    routes.sent('a/2', routes.route(0, 'a/2'));
    routes.settled('a/2');
    expect(await hasSettled(first), "another address's settle").to.equal(false);
    routes.settled('a/1');
    expect(await hasSettled(first), 'one routed ask still outstanding').to.equal(false);
    routes.settled('a/1');
    expect(await hasSettled(first)).to.equal(true);
    expect(await hasSettled(second)).to.equal(true);
    expect(routes.offInboxes('a/1')).to.equal(undefined);
  });

  it("releases a waiting tell when the address's routed asks move to the queue, and keeps them pinned there", async () => {
    const routes = new OwnerRoutes(SELF);
    routes.answered(0, B);
    routes.sent('a/1', routes.route(0, 'a/1'));
    routes.sent('a/1', routes.route(0, 'a/1'));
    const waiting = routes.offInboxes('a/1')!;

    routes.rerouted('a/1', C.inbox);
    expect(await hasSettled(waiting), 'rerouted from an inbox it was not on').to.equal(false);
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);

    routes.rerouted('a/1', B.inbox);
    expect(await hasSettled(waiting)).to.equal(true);
    expect(routes.hasRoutedAsks('a/1')).to.equal(false);
    expect(routes.offInboxes('a/1')).to.equal(undefined);
    // Still outstanding, now through the queue: a later ask follows them there until both settle.
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    routes.settled('a/1');
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    routes.settled('a/1');
    expect(routes.route(0, 'a/1')).to.equal(B.inbox);
  });

  it('forgets the holders that are gone and answers their inboxes', () => {
    const routes = new OwnerRoutes(SELF);
    routes.answered(0, B);
    routes.answered(1, B);
    routes.answered(2, C);
    expect(routes.forget((holder) => holder.nodeId === 'node-x')).to.deep.equal(new Set());

    const forgotten = routes.forget((holder) => holder.nodeId === B.nodeId);
    expect(forgotten).to.deep.equal(new Set([B.inbox]));
    expect(routes.holderOf(0)).to.equal(undefined);
    expect(routes.holderOf(1)).to.equal(undefined);
    expect(routes.route(0, 'a/1')).to.equal(QUEUE_ROUTE);
    expect(routes.route(2, 'a/2')).to.equal(C.inbox);

    expect(routes.forget(() => true)).to.deep.equal(new Set([C.inbox]));
    expect(routes.route(2, 'a/2')).to.equal(QUEUE_ROUTE);
  });
});
