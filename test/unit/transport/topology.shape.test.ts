/**
 * Invariant: the declared topology is what the design promises an operator will see: one durable quorum queue per
 * shard with single-active-consumer, a delivery limit and the dead-letter exchange, bound to the shard exchange by
 * shard number; a dead-letter queue; and a bounded, exclusive event queue per node. Names follow the prefix.
 */
import { expect } from 'chai';
import { shardTopology } from '../../../transport/amqp/topology.js';

describe('AMQP topology', () => {
  const topology = shardTopology({ prefix: 'troupe', shardCount: 3, nodeId: 'node-a', deliveryLimit: 5 });

  it('declares the shard, dead-letter, event and lost-event exchanges', () => {
    expect(topology.exchanges).to.deep.equal([
      { name: 'troupe.shards', type: 'direct', durable: true },
      { name: 'troupe.dlx', type: 'fanout', durable: true },
      { name: 'troupe.events', type: 'topic', durable: true },
      { name: 'troupe.events-lost', type: 'direct', durable: true },
    ]);
  });

  it('declares one single-active-consumer quorum queue per shard that dead-letters after the delivery limit', () => {
    const shards = topology.queues.filter((q) => q.name.startsWith('troupe.shard.'));
    expect(shards.map((q) => q.name)).to.deep.equal(['troupe.shard.0', 'troupe.shard.1', 'troupe.shard.2']);
    for (const queue of shards) {
      expect(queue.durable).to.equal(true);
      expect(queue.arguments).to.deep.equal({
        'x-queue-type': 'quorum',
        'x-single-active-consumer': true,
        'x-delivery-limit': 5,
        'x-dead-letter-exchange': 'troupe.dlx',
        'x-dead-letter-strategy': 'at-least-once',
        'x-overflow': 'reject-publish',
      });
      // Queues declared before decision 0048 lack the last two; re-declaring them answers 406, which is tolerated.
      expect(queue.mayPredate).to.equal(true);
    }
    expect(topology.bindings.filter((b) => b.exchange === 'troupe.shards')).to.deep.equal([
      { queue: 'troupe.shard.0', exchange: 'troupe.shards', routingKey: '0' },
      { queue: 'troupe.shard.1', exchange: 'troupe.shards', routingKey: '1' },
      { queue: 'troupe.shard.2', exchange: 'troupe.shards', routingKey: '2' },
    ]);
  });

  it('gives each node an exclusive, bounded event queue whose dropped events reach its own lost-event queue', () => {
    const events = topology.queues.find((q) => q.name === 'troupe.events.node-a');
    expect(events).to.include({ exclusive: true, autoDelete: true, durable: false });
    expect(events?.arguments).to.deep.equal({
      'x-max-length': 10_000, 'x-overflow': 'drop-head', 'x-dead-letter-exchange': 'troupe.events-lost', 'x-dead-letter-routing-key': 'node-a',
    });
    const lost = topology.queues.find((q) => q.name === 'troupe.events-lost.node-a');
    expect(lost).to.include({ exclusive: true, autoDelete: true, durable: false });
    expect(topology.bindings).to.deep.include({ queue: 'troupe.events-lost.node-a', exchange: 'troupe.events-lost', routingKey: 'node-a' });
  });

  it('sends every dead letter to one durable, bounded queue that refuses past its bound', () => {
    const dead = topology.queues.find((q) => q.name === 'troupe.dead-letter');
    expect(dead).to.include({ durable: true, exclusive: false, mayPredate: true });
    expect(dead?.arguments).to.deep.equal({ 'x-queue-type': 'quorum', 'x-max-length': 10_000, 'x-overflow': 'reject-publish' });
    expect(topology.bindings).to.deep.include({ queue: 'troupe.dead-letter', exchange: 'troupe.dlx', routingKey: '' });
  });
});
