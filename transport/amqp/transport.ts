import { randomBytes } from 'node:crypto';
import type { Channel, ChannelModel, ConfirmChannel, Message } from 'amqplib';
import type { Registry } from 'prom-client';
import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { AskOptions, DeliveryHandler, EventHandler, LostEventListener, Transport, Unsubscribe } from '../port.js';
import { KeyedSerial } from '../keyed-serial.js';
import { DEFAULT_TELL_TTL_MS } from '../deadlines.js';
import { DEFAULT_DEAD_LETTER_BOUND, shardTopology, topologyNames, type Topology, type TopologyNames } from './topology.js';
import { declareTopologyInParallel } from './declare-in-parallel.js';
import { AmqpDeadLetters } from './dead-letters.js';
import { deadLetterPolicies, type PolicySpec } from './dead-letter-policy.js';
import { managementUrlFor, vhostOf, type ManagementApi } from './management-api.js';
import { transportMetrics, type TransportMetrics } from './metrics.js';
import { ShortcutGate } from './shortcut.js';
import { OwnerRoutes } from './owner-routes.js';
import { ForwardedAsks } from './forwarded-asks.js';
import { BrokerConnection, type Session } from './connection.js';
import type { BrokerLivenessOptions } from './broker-liveness.js';
import { ChannelSettlement } from './settlement.js';
import { EventBus } from './events.js';
import { LostEvents } from './events-lost.js';
import { ShardOwnership, type ShardStatus } from './shard-ownership.js';
import { DeliveryRunner } from './delivery-runner.js';
import { ShardDeliveries } from './shard-deliveries.js';
import { RoutedAsks } from './routed-asks.js';
import { InProcessAsks } from './in-process.js';
import { Asker } from './asker.js';
import { TellTurns, Teller } from './teller.js';
import { DIRECT_REPLY_TO } from './wire.js';

export type { ShardStatus } from './shard-ownership.js';

export interface AmqpTransportOptions {
  /** amqp://user:pass@host:port/vhost */
  readonly url: string;
  readonly nodeId: string;
  /** Fixed for the life of a cluster (transport/shards.ts). */
  readonly shardCount: number;
  /** Shards this node consumes. @default 'all' */
  readonly ownedShards?: 'all' | readonly number[];
  readonly log: Logger;
  /** Prefix of every exchange and queue name; tests use `troupe-test-<random>`. @default 'troupe' */
  readonly prefix?: string;
  /** Unacknowledged deliveries per shard consumer, i.e. handlers running at once per shard. @default 64 */
  readonly prefetch?: number;
  /** Returns of a crashing message before it is dead-lettered: 4 means at most 5 deliveries. @default 4 */
  readonly deliveryLimit?: number;
  /** Dead letters the dead-letter queue keeps; past it they wait in their shard queues (decision 0048). @default 10000 */
  readonly deadLetterBound?: number;
  /**
   * The broker's management API, used to give queues an older Troupe declared the dead-letter policies (decision
   * 0048); false: never called (the operator sets them). @default the AMQP URL's host, port 15672, same credentials
   */
  readonly management?: ManagementApi | false;
  /** AMQP heartbeat; a hung node loses its shards within two of these. @default 10 */
  readonly heartbeatSeconds?: number;
  /** How long tell/publish wait for the broker's confirm before reporting TRANSPORT_UNAVAILABLE. @default 10000 */
  readonly confirmTimeoutMs?: number;
  /** Events kept for this node before the oldest drop (and are reported lost). @default 10000 */
  readonly eventBacklog?: number;
  /** Noticing a broker that stopped answering (broker-liveness.ts): probe interval and silence allowed; false turns it off. */
  readonly brokerLiveness?: BrokerLivenessOptions | false;
  /** @default DEFAULT_TELL_TTL_MS */
  readonly tellTtlMs?: number;
  /** Attempts to reach the broker at start before `start` fails; after the first connection it retries forever. @default 5 */
  readonly initialConnectRetries?: number;
  readonly metrics?: Registry;
  /**
   * Called when the broker connection drops while this node held shards: RabbitMQ hands them to standbys at once,
   * so the node must stop the actors of those shards (the cluster wiring passivates them). Not called on `close`.
   */
  readonly onShardsLost?: (shards: readonly number[]) => void;
  /**
   * Asks to a shard this node holds run in-process, skipping the broker, when that cannot overtake anything
   * (transport/amqp/shortcut.ts). Tells always take the broker: they must be durable when they resolve. @default true
   */
  readonly shortcut?: boolean;
  /**
   * Asks to a shard another node holds go straight to that node's inbox once a reply has named it, instead of
   * through the shard's quorum queue, when that cannot overtake anything (owner-routes.ts). @default true
   */
  readonly ownerRouting?: boolean;
}

/**
 * The RabbitMQ transport: a façade over its pieces (ops/decisions/0035-transport-in-pieces.md), which it builds and
 * wires. See ops/decisions/0003-transport-over-rabbitmq.md.
 *
 * - connection.ts: the broker connection with amqplib's recovery, its session, confirmed publishing;
 * - shard-ownership.ts (with the state table in shard-table.ts): consuming, holding, handing over and losing shards;
 * - shard-deliveries.ts: what arrives on a shard queue, and the crash/requeue/dead-letter rules;
 * - asker.ts: asks through a shard queue or a holder's inbox, and their replies; teller.ts: tells;
 * - routed-asks.ts: asks other nodes routed to this node's inbox; in-process.ts: asks that skip the broker;
 * - events.ts: publish and subscribe; settlement.ts: acks and replies per consumer channel.
 */
export class AmqpTransport implements Transport {
  readonly kind = 'amqp' as const;
  /** The name this node's connection shows in the management console (client property `connection_name`). */
  readonly connectionName: string;
  readonly names: TopologyNames;
  readonly topology: Topology;
  /** Prefix of every exchange and queue name (`troupe` in production). */
  readonly prefix: string;
  readonly deadLetters: AmqpDeadLetters;
  /** The policies that give queues an older Troupe declared the dead-letter settings they lack (decision 0048). */
  readonly deadLetterPolicies: readonly PolicySpec[];

  private readonly log: Logger;
  private readonly prefetch: number;
  private readonly metrics: TransportMetrics | undefined;
  private readonly link: BrokerConnection;
  private readonly settlement: ChannelSettlement;
  /** One turn per address across every path a delivery takes here: an actor's mailbox order. */
  private readonly mailboxes = new KeyedSerial();
  private readonly gate: ShortcutGate;
  /** Routed asks forwarded and not yet back from their queue: later routed asks to their addresses follow them. */
  private readonly forwarded = new ForwardedAsks();
  private readonly ownership: ShardOwnership;
  private readonly events: EventBus;
  private readonly lostEvents: LostEvents;
  private readonly deliveries: ShardDeliveries;
  private readonly routed: RoutedAsks;
  private readonly asker: Asker;
  private readonly teller: Teller;
  private readonly ownerRouting: boolean;
  private handler: DeliveryHandler | undefined;

  constructor(options: AmqpTransportOptions) {
    if (!Number.isInteger(options.shardCount) || options.shardCount < 1) throw new TroupeError('INTERNAL', 'shardCount must be a positive integer');
    const prefix = options.prefix ?? 'troupe';
    const { nodeId, shardCount } = options;
    this.prefix = prefix;
    const log = (this.log = options.log.child({ component: 'transport' }));
    const initial =
      options.ownedShards === undefined || options.ownedShards === 'all'
        ? Array.from({ length: shardCount }, (_, shard) => shard)
        : [...options.ownedShards];
    const prefetch = (this.prefetch = options.prefetch ?? 64);
    const deliveryLimit = options.deliveryLimit ?? 4;
    const deadLetterBound = options.deadLetterBound ?? DEFAULT_DEAD_LETTER_BOUND;
    const metrics = (this.metrics = options.metrics ? transportMetrics(options.metrics) : undefined);
    const gate = (this.gate = new ShortcutGate(prefetch));
    const shortcut = options.shortcut ?? true;
    const ownerRouting = (this.ownerRouting = options.ownerRouting ?? true);
    const routes = new OwnerRoutes(nodeId);
    const names = (this.names = topologyNames(prefix, nodeId));
    this.topology = shardTopology({ prefix, shardCount, nodeId, deliveryLimit, deadLetterBound, ...(options.eventBacklog ? { eventBacklog: options.eventBacklog } : {}) });
    this.deadLetterPolicies = deadLetterPolicies(prefix, names, deliveryLimit, deadLetterBound);
    const connectionName = (this.connectionName = `${prefix}:${nodeId}:${randomBytes(4).toString('hex')}`);
    const link = (this.link = new BrokerConnection(
      {
        url: options.url, name: connectionName, heartbeatSeconds: options.heartbeatSeconds ?? 10,
        initialConnectRetries: options.initialConnectRetries ?? 5, confirmTimeoutMs: options.confirmTimeoutMs ?? 10_000, log, metrics,
        liveness: options.brokerLiveness ?? {},
      },
      {
        prepare: (model, consumer, publisher) => this.prepare(model, consumer, publisher),
        live: () => this.onLive(),
        lost: (reason) => this.onLost(reason),
        drain: (session) => this.drain(session),
        closed: () => this.asker.failPending('transport is closed'),
      },
    ));
    const settlement = (this.settlement = new ChannelSettlement(log));
    const { forwarded, mailboxes } = this;
    const handler: DeliveryHandler = (address, message, deadline) => this.handler!(address, message, deadline);
    const ownership = (this.ownership = new ShardOwnership({
      shardCount, initial, connectionName, names, link, gate, forwarded, settlement, log, sealing: shortcut || ownerRouting,
      onShardsLost: options.onShardsLost,
      onDelivery: (session, shard, msg) => this.deliveries.onDelivery(session, shard, msg),
    }));
    this.events = new EventBus(link, names, nodeId, settlement, log);
    this.lostEvents = new LostEvents(names, settlement, log, metrics);
    const runner = new DeliveryRunner(handler, link, names, nodeId, settlement, log, metrics);
    this.deliveries = new ShardDeliveries({ nodeId, shardCount, deliveryLimit, names, link, ownership, gate, forwarded, settlement, runner, mailboxes, log, metrics });
    this.routed = new RoutedAsks({ shardCount, prefetch, ownership, gate, forwarded, settlement, runner, mailboxes, log, metrics });
    const inProcess = new InProcessAsks({ enabled: shortcut, nodeId, handler, ownership, gate, routes, mailboxes, log, metrics });
    const tellTurns = new TellTurns(routes);
    const asker = (this.asker = new Asker({ nodeId, shardCount, prefix, ownerRouting, names, link, ownership, routes, inProcess, tellTurns, log, metrics }));
    this.teller = new Teller({
      nodeId, shardCount, tellTtlMs: options.tellTtlMs ?? DEFAULT_TELL_TTL_MS, names, link, gate, routes, turns: tellTurns,
      flushAsks: (shard) => asker.flushShard(shard),
    });
    const management = options.management === false ? undefined : (options.management ?? { url: managementUrlFor(options.url), vhost: vhostOf(options.url) });
    this.deadLetters = new AmqpDeadLetters({
      deadLetterQueue: names.deadLetterQueue, bound: deadLetterBound, link, management, policies: this.deadLetterPolicies, log,
      tell: (address, message) => this.teller.tell(address, message),
    });
  }

  /** The shards this node consumes and those it knows it holds, both sorted. */
  shardStatus(): ShardStatus {
    return this.ownership.status();
  }

  /** Our consumer tag per shard on the current connection, to match against the broker's consumer list. */
  shardConsumerTags(): ReadonlyMap<number, string> {
    return this.ownership.consumerTags();
  }

  /**
   * Subscribes to a shard (as a standby if another node holds it; RabbitMQ activates us when that consumer goes).
   * Kept across reconnects.
   */
  consumeShard(shard: number): Promise<void> {
    return this.ownership.consume(shard);
  }

  /** Hands a shard over after `beforeCancel` (shard-ownership.ts says how). */
  releaseShard(shard: number, beforeCancel?: () => Promise<void>): Promise<void> {
    return this.ownership.release(shard, beforeCancel);
  }

  /** Folds in the broker's consumer list (management API); see shard-ownership.ts. */
  noteBrokerView(activeTags: ReadonlySet<string>, staleMs?: number): void {
    this.ownership.noteBrokerView(activeTags, staleMs);
  }

  /** Sends an empty probe through a shard queue, so that its active consumer learns it holds the shard. Best effort. */
  probeShard(shard: number): void {
    this.ownership.probe(shard);
  }

  async start(handler: DeliveryHandler): Promise<void> {
    if (this.link.state === 'idle') this.handler = handler;
    await this.link.start();
  }

  ready(): boolean {
    return this.link.ready();
  }

  /** How many times a broker connection has been set up; grows by one on every successful reconnect. */
  get connectionCount(): number {
    return this.link.count;
  }

  /** This connection's inbox, advertised in the cluster's presence heartbeats; undefined while disconnected or off. */
  get inbox(): string | undefined {
    return this.link.session?.inbox;
  }

  ask<R = unknown>(address: string, message: unknown, options: AskOptions): Promise<R> {
    return this.asker.ask<R>(address, message, options);
  }

  /** An inbox is gone: the asks sent to it go again through their shard queues (asker.ts). */
  inboxGone(inbox: string): void {
    this.asker.inboxGone(inbox);
  }

  /** A node died: the asks waiting on its inboxes go again through their shard queues (asker.ts). */
  holderGone(nodeId: string): void {
    this.asker.holderGone(nodeId);
  }

  tell(address: string, message: unknown): Promise<void> {
    return this.teller.tell(address, message);
  }

  publish(topic: string, event: unknown): Promise<void> {
    return this.events.publish(topic, event);
  }

  subscribe(pattern: string, handler: EventHandler): Promise<Unsubscribe> {
    return this.events.subscribe(pattern, handler);
  }

  onEventsLost(listener: LostEventListener): () => void {
    return this.lostEvents.listen(listener);
  }

  close(): Promise<void> {
    return this.link.close();
  }

  /** A new connection's session: topology, event bindings, reply and event consumers, the inbox, the shards. */
  private async prepare(model: ChannelModel, consumer: Channel, publisher: ConfirmChannel): Promise<Session> {
    const { predating } = await declareTopologyInParallel(model, this.topology, (channels) => this.events.bindAll(channels));
    this.deadLetters.noteDeclared(predating);
    publisher.on('return', (msg: Message) => this.asker.onReturned(msg));
    // The reply consumer and the event consumers are on two channels: set up side by side (each step a round trip).
    const [, consumerTags] = await Promise.all([
      publisher.consume(DIRECT_REPLY_TO, (msg) => this.asker.onReply(msg), { noAck: true }),
      (async () => {
        // Per-consumer limit (global=false): each shard gets its own window, so one busy shard cannot starve the others.
        await consumer.prefetch(this.prefetch, false);
        return [await this.events.consume(consumer), await this.lostEvents.consume(consumer)];
      })(),
    ]);
    this.ownership.reset();
    // A name of its own per connection: the broker may not yet have dropped the previous connection's inbox.
    const inbox = this.ownerRouting ? this.names.inbox(randomBytes(4).toString('hex')) : undefined;
    const session: Session = { model, publisher, consumer, consumerTags, inbox };
    if (inbox !== undefined) {
      // Exclusive and not durable: it goes with this connection, and an ask routed to it afterwards comes back to
      // its asker as unroutable (`mandatory`). No acks: a routed ask is answered, forwarded or lost with the node.
      await consumer.assertQueue(inbox, { durable: false, exclusive: true, autoDelete: true });
      await consumer.consume(inbox, (msg) => this.routed.onRouted(session, msg), { noAck: true });
      this.settlement.nameInbox(consumer, inbox);
    }
    await this.ownership.subscribeWanted(session);
    return session;
  }

  private onLive(): void {
    this.log.info({ shards: this.ownership.table.wantedCount(), connection: this.connectionName }, 'transport connected');
    this.events.resync();
  }

  /** The session is gone: pending asks can never hear their replies, and the shards went to the standbys. */
  private onLost(reason: string): void {
    this.asker.failPending(reason);
    this.ownership.lose();
  }

  private async drain(session: Session | undefined): Promise<void> {
    if (session) {
      // Stop taking deliveries first; deliveries already received are handled, replied to and acked below.
      const tags = [...session.consumerTags, ...this.ownership.consumerTags().values()];
      await Promise.allSettled(tags.map((tag) => session.consumer.cancel(tag)));
      // Deleting the inbox (rather than cancelling its consumer) leaves no moment in which a routed ask is taken
      // by the broker and dropped: until the delete it reaches us and is forwarded (we are draining), after it
      // it returns to its asker, who sends it through the queue.
      if (session.inbox !== undefined) {
        this.settlement.forgetInbox(session.consumer);
        await session.consumer.deleteQueue(session.inbox).catch(() => undefined);
      }
    }
    await this.mailboxes.idle();
    await this.routed.forwarded();
    if (session) this.settlement.flush(session.consumer);
  }
}
