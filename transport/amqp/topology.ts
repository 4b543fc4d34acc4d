import type { Channel } from 'amqplib';

/**
 * The broker topology as data. It is re-declared on every (re)connect, so a broker that lost it (restart, an
 * operator deleting a queue) is repaired by reconnecting, and declaring it twice is harmless. Names carry a
 * prefix (`troupe` in production, `troupe-test-<random>` in tests) so runs never share queues.
 * See ops/decisions/0003-transport-over-rabbitmq.md.
 */

export interface ExchangeSpec {
  readonly name: string;
  readonly type: 'direct' | 'topic' | 'fanout';
  readonly durable: boolean;
}

export interface QueueSpec {
  readonly name: string;
  readonly durable: boolean;
  readonly exclusive: boolean;
  readonly autoDelete: boolean;
  readonly arguments: Readonly<Record<string, unknown>>;
  /**
   * An older Troupe declared this queue with other arguments (before decision 0048). Re-declaring it answers 406
   * PRECONDITION_FAILED; that proves the queue is there, so it is used as it is and reported, and the dead-letter
   * policy (dead-letter-policy.ts) gives it the settings its arguments lack.
   */
  readonly mayPredate?: true;
}

export interface BindingSpec {
  readonly queue: string;
  readonly exchange: string;
  readonly routingKey: string;
}

export interface Topology {
  readonly exchanges: readonly ExchangeSpec[];
  readonly queues: readonly QueueSpec[];
  readonly bindings: readonly BindingSpec[];
}

export interface TopologyNames {
  /** Direct exchange; routing key = shard number. */
  readonly shardExchange: string;
  readonly shardQueue: (shard: number) => string;
  readonly deadLetterExchange: string;
  readonly deadLetterQueue: string;
  /** Topic exchange for events; routing key = topic. */
  readonly eventExchange: string;
  /** This node's private event queue; bound once per subscribed pattern. */
  readonly eventQueue: string;
  /** Direct exchange that events dropped from a full event queue are dead-lettered to; routing key = node id. */
  readonly lostEventExchange: string;
  /** This node's notices of its own dropped events (events-lost.ts). */
  readonly lostEventQueue: string;
  /** One connection's inbox for owner-routed asks (owner-routes.ts); `suffix` tells its connections apart. */
  readonly inbox: (suffix: string) => string;
}

export interface TopologyOptions {
  /** @default 'troupe' */
  readonly prefix: string;
  readonly shardCount: number;
  readonly nodeId: string;
  /**
   * Returns of one message before the shard queue dead-letters it (so `deliveryLimit + 1` deliveries in all).
   * RabbitMQ 3.10 quorum queues have no default limit, so without this a message that crashes its handler would
   * loop forever.
   */
  readonly deliveryLimit: number;
  /**
   * Dead letters kept before the dead-letter queue refuses more. Refused ones wait in their shard queue (at-least-once
   * dead-lettering) until an operator replays or purges some; the broker may overshoot by the few in flight. @default 10000
   */
  readonly deadLetterBound?: number;
  /**
   * Events waiting for a slow node beyond this count drop from the head: a node that cannot keep up loses old
   * live-view events rather than growing the broker's memory without bound. @default 10000
   */
  readonly eventBacklog?: number;
}

export const DEFAULT_DEAD_LETTER_BOUND = 10_000;

export function topologyNames(prefix: string, nodeId: string): TopologyNames {
  return {
    shardExchange: `${prefix}.shards`,
    shardQueue: (shard) => `${prefix}.shard.${shard}`,
    deadLetterExchange: `${prefix}.dlx`,
    deadLetterQueue: `${prefix}.dead-letter`,
    eventExchange: `${prefix}.events`,
    eventQueue: `${prefix}.events.${nodeId}`,
    lostEventExchange: `${prefix}.events-lost`,
    lostEventQueue: `${prefix}.events-lost.${nodeId}`,
    inbox: (suffix) => `${prefix}.inbox.${nodeId}.${suffix}`,
  };
}

export function shardTopology(options: TopologyOptions): Topology {
  const names = topologyNames(options.prefix, options.nodeId);
  const shards = Array.from({ length: options.shardCount }, (_, shard) => shard);
  return {
    exchanges: [
      { name: names.shardExchange, type: 'direct', durable: true },
      // Fanout: every dead letter lands in the one queue whatever shard key it carried.
      { name: names.deadLetterExchange, type: 'fanout', durable: true },
      { name: names.eventExchange, type: 'topic', durable: true },
      { name: names.lostEventExchange, type: 'direct', durable: true },
    ],
    queues: [
      ...shards.map((shard) => ({
        name: names.shardQueue(shard),
        durable: true,
        exclusive: false,
        autoDelete: false,
        arguments: {
          // Replicated and durable; the only queue type where single-active-consumer hands over cleanly (DESIGN rule 3).
          'x-queue-type': 'quorum',
          // One node consumes a shard at a time; the others wait as standby consumers and take over when it goes.
          'x-single-active-consumer': true,
          'x-delivery-limit': options.deliveryLimit,
          'x-dead-letter-exchange': names.deadLetterExchange,
          // At-least-once dead-lettering: the shard queue keeps a dead letter until the dead-letter queue confirms it,
          // instead of dropping it when that queue is full or away. RabbitMQ enables it only with reject-publish
          // overflow; with no length limit set here that overflow never refuses a publish (decision 0048).
          'x-dead-letter-strategy': 'at-least-once',
          'x-overflow': 'reject-publish',
        },
        mayPredate: true as const,
      })),
      {
        name: names.deadLetterQueue, durable: true, exclusive: false, autoDelete: false,
        // Bounded: past the bound it refuses, and at-least-once leaves the refused ones in their shard queues.
        arguments: { 'x-queue-type': 'quorum', 'x-max-length': options.deadLetterBound ?? DEFAULT_DEAD_LETTER_BOUND, 'x-overflow': 'reject-publish' },
        mayPredate: true as const,
      },
      {
        name: names.eventQueue,
        durable: false,
        // Lives and dies with this node's connection; a restarted node has nothing to catch up on (SSE resumes from storage).
        exclusive: true,
        autoDelete: true,
        // What drops off the head is dead-lettered to this node's lost-event queue (its topic kept in x-death), so the
        // node counts the loss and tells the streams that missed events (issue 20) instead of losing them silently.
        arguments: {
          'x-max-length': options.eventBacklog ?? 10_000, 'x-overflow': 'drop-head',
          'x-dead-letter-exchange': names.lostEventExchange, 'x-dead-letter-routing-key': options.nodeId,
        },
      },
      {
        name: names.lostEventQueue,
        durable: false,
        exclusive: true,
        autoDelete: true,
        // Only the count and the topics matter; a flood of notices keeps the newest.
        arguments: { 'x-max-length': 1_000, 'x-overflow': 'drop-head' },
      },
    ],
    bindings: [
      ...shards.map((shard) => ({ queue: names.shardQueue(shard), exchange: names.shardExchange, routingKey: String(shard) })),
      { queue: names.deadLetterQueue, exchange: names.deadLetterExchange, routingKey: '' },
      { queue: names.lostEventQueue, exchange: names.lostEventExchange, routingKey: options.nodeId },
    ],
  };
}

/**
 * Declares everything; operations are pipelined on one channel rather than awaited one by one. Queues that may
 * predate their current arguments are declared on channels of their own (`scratch`), because a 406 closes the
 * channel it happens on; answers the names of those that turned out to be older (see `mayPredate`).
 */
export async function declareTopology(channel: Channel, topology: Topology, scratch: () => Promise<Channel>): Promise<{ predating: string[] }> {
  await Promise.all(topology.exchanges.map((e) => channel.assertExchange(e.name, e.type, { durable: e.durable })));
  const predating = await declareMaybeOlder(scratch, topology.queues.filter((q) => q.mayPredate));
  await Promise.all(topology.queues.filter((q) => !q.mayPredate).map((q) => channel.assertQueue(q.name, queueOptions(q))));
  await Promise.all(topology.bindings.map((b) => channel.bindQueue(b.queue, b.exchange, b.routingKey)));
  return { predating };
}

function queueOptions(q: QueueSpec) {
  return { durable: q.durable, exclusive: q.exclusive, autoDelete: q.autoDelete, arguments: { ...q.arguments } };
}

/** One pipelined try; only when it fails are the queues tried one by one, a fresh channel after each 406. */
async function declareMaybeOlder(scratch: () => Promise<Channel>, queues: readonly QueueSpec[]): Promise<string[]> {
  if (queues.length === 0) return [];
  const open = async () => {
    const channel = await scratch();
    // A 406 closes the channel with an 'error' event; the failed declare already says so to its caller.
    channel.on('error', () => undefined);
    return channel;
  };
  let channel = await open();
  const all = await Promise.allSettled(queues.map((q) => channel.assertQueue(q.name, queueOptions(q))));
  const failed = all.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed === undefined) {
    await channel.close();
    return [];
  }
  if (!isPreconditionFailed(failed.reason)) throw failed.reason;
  const predating: string[] = [];
  channel = await open();
  for (const queue of queues) {
    try {
      await channel.assertQueue(queue.name, queueOptions(queue));
    } catch (err) {
      if (!isPreconditionFailed(err)) throw err;
      predating.push(queue.name);
      channel = await open();
    }
  }
  await channel.close();
  return predating;
}

/** The broker's 406: the queue exists with other arguments. */
function isPreconditionFailed(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 406;
}

/** Removes a topology; tests and benchmarks call it so their prefixed queues do not outlive the run. */
export async function deleteTopology(channel: Channel, topology: Topology): Promise<void> {
  await Promise.all(topology.queues.map((q) => channel.deleteQueue(q.name)));
  await Promise.all(topology.exchanges.map((e) => channel.deleteExchange(e.name)));
}
