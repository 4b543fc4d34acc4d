import { randomBytes } from 'node:crypto';
import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type Message, type RecoveringChannelModel } from 'amqplib';
import type { Registry } from 'prom-client';
import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError, asTroupeError, fromWire } from '../../ops/kernel/errors.js';
import type { AskOptions, DeliveryHandler, EventHandler, Transport, Unsubscribe } from '../port.js';
import { shardOf } from '../shards.js';
import { KeyedSerial } from '../keyed-serial.js';
import { Tally } from '../tally.js';
import { assertPattern, assertTopic, matchesTopic } from '../topic-pattern.js';
import { DEFAULT_TELL_TTL_MS, EVENT_TTL_MS, askDeadline, assertTimeout } from '../deadlines.js';
import {
  EnvelopeVersionError, MalformedEnvelopeError, assertAddress, createEnvelope, decodeEnvelope, encodeEnvelope, errorReply, newMessageId,
  okReply, readReply, type Envelope, type Reply,
} from '../envelope.js';
import { declareTopology, shardTopology, topologyNames, type Topology, type TopologyNames } from './topology.js';
import { transportMetrics, type TransportMetrics } from './metrics.js';
import { ShortcutGate } from './shortcut.js';
import { coalesceSocketWrites } from './coalesce-writes.js';
import { AckBatcher, type Settlement } from './ack-batcher.js';
import { ASK_BATCH_TYPE, REPLY_BATCH_TYPE, TurnOutbox, decodeBatch, encodeBatch, type Outgoing } from './ask-batch.js';
import { OwnerRoutes, QUEUE_ROUTE, type Replier } from './owner-routes.js';
import { ForwardedAsks } from './forwarded-asks.js';
import { ChurnMap, ChurnSet } from '../../ops/kernel/churn-map.js';

/** RabbitMQ's pseudo-queue for direct reply-to: replies skip queues entirely and go to the asking channel. */
const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';
/** AMQP `type` of an ownership probe: an empty message that only proves who holds a shard (decision 0010). */
const PROBE_TYPE = 'probe';
/** AMQP `type` of a seal marker: a probe that also tells its sender when it may skip the broker (shortcut.ts). */
const SEAL_TYPE = 'seal';
/** Reply header naming the answering node's inbox: askers route later asks of that shard there (owner-routes.ts). */
const INBOX_HEADER = 'x-troupe-inbox';
/**
 * Routed asks of one shard running at once on its holder, in shard-consumer windows (`prefetch`). Routed asks carry
 * no window: past this a holder forwards them, and the queue's window holds them back. Several windows, because a
 * routed ask is an ask that would otherwise have been batched up to 64 to a message through the same window.
 */
const ROUTED_PER_PREFETCH = 4;
/** What follows `<prefix>.inbox.<nodeId>.` in an inbox name: the connection's random suffix. */
const INBOX_SUFFIX = /^[0-9a-f]{1,16}$/;

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
  /** Redeliveries of a crashing message before it is dead-lettered. @default 5 */
  readonly deliveryLimit?: number;
  /** AMQP heartbeat; a hung node loses its shards within two of these. @default 10 */
  readonly heartbeatSeconds?: number;
  /** How long tell/publish wait for the broker's confirm before reporting TRANSPORT_UNAVAILABLE. @default 10000 */
  readonly confirmTimeoutMs?: number;
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

/** Which shards this node subscribes to, and which of those it knows it holds (ops/decisions/0010-cluster-placement.md). */
export interface ShardStatus {
  /** Shards with a consumer of ours, active or standby. */
  readonly consuming: readonly number[];
  /** Shards whose single active consumer is ours, learnt from a delivery or from the broker's consumer list. */
  readonly active: readonly number[];
  /** Active shards whose seal marker came back to us: proven ours, so routed and in-process asks run here. */
  readonly proven: readonly number[];
}

/** Everything that belongs to one broker connection; replaced wholesale on reconnect. */
interface Session {
  readonly model: ChannelModel;
  /** Confirm channel for asks, tells and events; also consumes direct reply-to, as RabbitMQ requires. */
  readonly publisher: ConfirmChannel;
  /** Shard and event consumers; replies and acks go out on it, reply first. */
  readonly consumer: Channel;
  /** The event consumer; shard consumers come and go with placement and live in `shardConsumers`. */
  readonly consumerTags: string[];
  /** This connection's inbox for owner-routed asks (exclusive: it goes with the connection); undefined when off. */
  readonly inbox: string | undefined;
}

interface PendingAsk {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: TroupeError) => void;
  readonly timer: NodeJS.Timeout;
  readonly startedAt: number;
  readonly address: string;
  readonly shard: number;
  /** The encoded ask, kept to send it again through the queue if the inbox it went to goes away. */
  readonly body: Buffer;
  /** QUEUE_ROUTE, or the holder's inbox it was sent to. */
  route: string;
  /** For an ask through the queue: the tells to its shard sent before it (OwnerRoutes.tellMark). */
  tellMark: number | undefined;
}

type State = 'idle' | 'running' | 'draining' | 'closed';

/**
 * The RabbitMQ transport. Asks go to a shard's quorum queue through a direct exchange (routing key = shard number)
 * on a confirm channel, pipelined, with direct reply-to for the answer and a per-ask deadline timer. This node
 * consumes its owned shards with single-active-consumer semantics, runs the handler in the address's turn, replies,
 * and acks only afterwards: the handler has made its work durable by then. Every failure is classified:
 *
 * - handler resolved → reply (asks) and ack;
 * - handler threw a TroupeError → it is an answer: reply with it and ack;
 * - handler crashed (anything else) → nack with requeue; the quorum queue counts the delivery and dead-letters it
 *   after `deliveryLimit` returns, so a poison message stops looping and the shard keeps flowing;
 * - malformed or foreign-version envelope → nack without requeue: straight to the dead-letter queue;
 * - deadline passed → ack and drop: the asker has already timed out.
 *
 * Asks made in one turn for one shard leave as one `ask-batch` message, and replies finished in one turn for one
 * asker as one `reply-batch` (ask-batch.ts); inside a batch each ask is settled as above, except that a crashing
 * ask is republished alone rather than taking its batch back to the queue.
 *
 * amqplib's built-in recovery reconnects with backoff and runs `setup` on every connection, which re-declares the
 * topology, re-binds event patterns and restarts consumers. While disconnected, asks fail at once with
 * TRANSPORT_UNAVAILABLE and pending asks are rejected: their replies could never arrive on a new channel.
 * See ops/decisions/0003-transport-over-rabbitmq.md.
 */
export class AmqpTransport implements Transport {
  readonly kind = 'amqp' as const;
  /** The name this node's connection shows in the management console (client property `connection_name`). */
  readonly connectionName: string;
  readonly names: TopologyNames;
  readonly topology: Topology;
  /** Prefix of every exchange and queue name (`troupe` in production). */
  readonly prefix: string;

  private readonly log: Logger;
  /** Shards this node wants a consumer on; survives reconnects, changed by `consumeShard`/`releaseShard`. */
  private readonly wantedShards: Set<number>;
  /** Shard → our consumer tag on the current session. */
  private readonly shardConsumers = new Map<number, string>();
  /** Shards we know we hold → when we last had proof (a delivery or the broker's consumer list), epoch ms. */
  private readonly activeShards = new Map<number, number>();
  /** Deliveries of a shard handed to the handler and not yet settled; a handover waits for zero. */
  private readonly inFlight = new Tally<number>();
  private readonly drainWaiters = new Map<number, Array<() => void>>();
  /** Shards being handed over → deliveries that arrived meanwhile, held unacked and returned after the cancel. */
  private readonly handingOver = new Map<number, ConsumeMessage[]>();
  /** One consume or release at a time per shard. */
  private readonly shardTurns = new KeyedSerial();
  private readonly prefetch: number;
  private readonly deliveryLimit: number;
  private readonly confirmTimeoutMs: number;
  private readonly tellTtlMs: number;
  private readonly metrics: TransportMetrics | undefined;
  private readonly mailboxes = new KeyedSerial();
  private readonly gate: ShortcutGate;
  private readonly shortcut: boolean;
  private readonly pending = new ChurnMap<string, PendingAsk>();
  private readonly outbox = new TurnOutbox<number>((shard, asks) => this.sendAsks(shard, asks));
  private readonly ownerRouting: boolean;
  private readonly routes: OwnerRoutes;
  /** One turn's owner-routed asks per holder inbox. */
  private readonly inboxOutbox = new TurnOutbox<string>((inbox, asks) => this.sendToInbox(inbox, asks));
  /** Address → resolves once a tell to it, waiting for earlier routed asks, has been published (`tell`). */
  private readonly tellTurns = new ChurnMap<string, Promise<void>>();
  /** Routed asks being forwarded to their shard queue; shutdown waits for them. */
  private readonly forwarding = new ChurnSet<Promise<void>>();
  /** Routed asks forwarded and not yet back from their queue: later routed asks to their addresses follow them. */
  private readonly forwarded = new ForwardedAsks();
  /** Shard → routed asks running here. */
  private readonly routedInFlight = new Tally<number>();
  /** Wanted event patterns → this node's handlers. The broker binding follows this map (`syncBinding`). */
  private readonly subscriptions = new Map<string, Set<EventHandler>>();
  private readonly bound = new Set<string>();
  private readonly bindingTurns = new KeyedSerial();
  private connection: RecoveringChannelModel | undefined;
  private session: Session | undefined;
  private handler: DeliveryHandler | undefined;
  private state: State = 'idle';
  private closing: Promise<void> | undefined;
  private connections = 0;

  constructor(private readonly options: AmqpTransportOptions) {
    if (!Number.isInteger(options.shardCount) || options.shardCount < 1) throw new TroupeError('INTERNAL', 'shardCount must be a positive integer');
    const prefix = options.prefix ?? 'troupe';
    this.prefix = prefix;
    this.log = options.log.child({ component: 'transport' });
    const initial =
      options.ownedShards === undefined || options.ownedShards === 'all'
        ? Array.from({ length: options.shardCount }, (_, shard) => shard)
        : [...options.ownedShards];
    for (const shard of initial) this.assertShard(shard);
    this.wantedShards = new Set(initial);
    this.prefetch = options.prefetch ?? 64;
    this.deliveryLimit = options.deliveryLimit ?? 5;
    this.confirmTimeoutMs = options.confirmTimeoutMs ?? 10_000;
    this.tellTtlMs = options.tellTtlMs ?? DEFAULT_TELL_TTL_MS;
    this.metrics = options.metrics ? transportMetrics(options.metrics) : undefined;
    this.gate = new ShortcutGate(this.prefetch);
    this.shortcut = options.shortcut ?? true;
    this.ownerRouting = options.ownerRouting ?? true;
    this.routes = new OwnerRoutes(options.nodeId);
    this.names = topologyNames(prefix, options.nodeId);
    this.topology = shardTopology({ prefix, shardCount: options.shardCount, nodeId: options.nodeId, deliveryLimit: this.deliveryLimit });
    this.connectionName = `${prefix}:${options.nodeId}:${randomBytes(4).toString('hex')}`;
  }

  /** The shards this node consumes and those it knows it holds, both sorted. */
  shardStatus(): ShardStatus {
    const consuming = [...this.shardConsumers.keys()].filter((shard) => this.wantedShards.has(shard)).sort((a, b) => a - b);
    const active = [...this.activeShards.keys()].filter((shard) => this.shardConsumers.has(shard)).sort((a, b) => a - b);
    return { consuming, active, proven: active.filter((shard) => this.gate.sealed(shard)) };
  }

  /** Our consumer tag per shard on the current connection, to match against the broker's consumer list. */
  shardConsumerTags(): ReadonlyMap<number, string> {
    return new Map(this.shardConsumers);
  }

  /**
   * Subscribes to a shard (as a standby if another node holds it; RabbitMQ activates us when that consumer goes).
   * Kept across reconnects.
   */
  consumeShard(shard: number): Promise<void> {
    this.assertShard(shard);
    return this.shardTurns.run(String(shard), async () => {
      this.wantedShards.add(shard);
      const session = this.session;
      if (session && !this.shardConsumers.has(shard)) await this.subscribeShard(session, shard);
    });
  }

  /**
   * Hands a shard over: deliveries arriving from now on are held back, the ones already running finish (they are
   * acked and answered), `beforeCancel` runs (the node passivates the shard's actors, so their state is all in
   * storage), and only then is the consumer cancelled, which makes RabbitMQ activate the next consumer. The held
   * deliveries return to the queue for it. Requeued returns count towards the delivery limit, so a message survives
   * `deliveryLimit` handovers in a row.
   */
  releaseShard(shard: number, beforeCancel: () => Promise<void> = async () => undefined): Promise<void> {
    this.assertShard(shard);
    return this.shardTurns.run(String(shard), async () => {
      this.wantedShards.delete(shard);
      // From here on asks to this shard take the broker, behind the in-process ones the drain below waits for.
      this.gate.drop(shard);
      this.forwarded.dropShard(shard);
      const session = this.session;
      const tag = this.shardConsumers.get(shard);
      if (!session || tag === undefined) {
        this.activeShards.delete(shard);
        return;
      }
      const parked: ConsumeMessage[] = [];
      this.handingOver.set(shard, parked);
      const wasActive = this.activeShards.has(shard);
      try {
        await this.drained(shard);
        await beforeCancel();
        acksOf(session.consumer).flush();
        await session.consumer.cancel(tag);
      } catch (err) {
        this.log.warn({ err: (err as Error).message, shard }, 'shard handover did not finish cleanly; the broker returns its messages');
      } finally {
        this.shardConsumers.delete(shard);
        this.activeShards.delete(shard);
        this.handingOver.delete(shard);
        for (const msg of parked) settle(session.consumer, msg, 'requeue');
      }
      if (wasActive) this.log.info({ shard, returned: parked.length }, 'handed a shard over');
    });
  }

  /**
   * Folds in the broker's consumer list (management API), which lags by its statistics interval: it may add a
   * shard we hold but have had no delivery on, and removes one only if no delivery has proved it for `staleMs`.
   */
  noteBrokerView(activeTags: ReadonlySet<string>, staleMs = 10_000): void {
    const now = Date.now();
    for (const [shard, tag] of this.shardConsumers) {
      if (this.handingOver.has(shard)) continue;
      if (activeTags.has(tag)) {
        if (!this.activeShards.has(shard)) this.markActive(shard);
      } else {
        const provenAt = this.activeShards.get(shard);
        if (provenAt !== undefined && now - provenAt > staleMs) {
          this.activeShards.delete(shard);
          this.gate.drop(shard);
          this.forwarded.dropShard(shard);
        }
      }
    }
  }

  /**
   * Sends an empty probe through a shard queue so that its active consumer learns it holds the shard without
   * waiting for real traffic (an idle shard after a failover or handover). Best effort.
   */
  probeShard(shard: number): void {
    this.assertShard(shard);
    const session = this.session;
    if (!session) return;
    try {
      session.publisher.publish(this.names.shardExchange, String(shard), Buffer.alloc(0), { type: PROBE_TYPE, persistent: false }, () => undefined);
    } catch {
      // the channel is gone; the next connection probes again
    }
  }

  private markActive(shard: number): void {
    if (!this.activeShards.has(shard)) this.log.info({ shard }, 'now holding a shard');
    this.activeShards.set(shard, Date.now());
    // The seal is the proof both the shortcut and routed asks run on: a belief from the broker's lagging consumer
    // list alone could name a shard we have just handed over.
    if ((this.shortcut || this.ownerRouting) && !this.handingOver.has(shard)) this.sendSeal(shard);
  }

  /** Sends a seal marker through the shard's queue unless one is open or on its way (shortcut.ts, rule 1). */
  private sendSeal(shard: number): void {
    const session = this.session;
    if (!session || this.state !== 'running') return;
    const token = this.gate.beginSeal(shard);
    if (token === undefined) return;
    try {
      session.publisher.publish(this.names.shardExchange, String(shard), Buffer.alloc(0), { type: SEAL_TYPE, messageId: token, persistent: false }, () => undefined);
    } catch {
      // the channel is gone; the seal is dropped with the connection and sent again on the next one
    }
  }

  private async subscribeShard(session: Session, shard: number): Promise<void> {
    // A readable tag: the broker's consumer list then says which node holds which shard.
    const consumerTag = `${this.connectionName}:shard.${shard}`;
    await session.consumer.consume(this.names.shardQueue(shard), (msg) => this.onDelivery(session.model, session.consumer, shard, msg), {
      noAck: false, consumerTag,
    });
    this.shardConsumers.set(shard, consumerTag);
  }

  private settledOne(shard: number): void {
    if (this.inFlight.remove(shard) > 0) return;
    for (const wake of this.drainWaiters.get(shard)?.splice(0) ?? []) wake();
  }

  private drained(shard: number): Promise<void> {
    if (!this.inFlight.has(shard)) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.drainWaiters.get(shard) ?? [];
      waiters.push(resolve);
      this.drainWaiters.set(shard, waiters);
    });
  }

  /** The connection is gone, and with it every shard we held: RabbitMQ has already activated the standbys. */
  private loseShards(): void {
    const lost = [...this.activeShards.keys()].sort((a, b) => a - b);
    this.activeShards.clear();
    this.gate.dropAll();
    this.forwarded.dropAll();
    this.shardConsumers.clear();
    this.handingOver.clear();
    if (lost.length === 0 || this.state !== 'running') return;
    this.log.warn({ shards: lost }, 'lost the broker connection while holding shards; their actors stop here');
    try {
      this.options.onShardsLost?.(lost);
    } catch (err) {
      this.log.error({ err }, 'onShardsLost threw');
    }
  }

  private assertShard(shard: number): void {
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.options.shardCount) throw new TroupeError('INTERNAL', `shard ${shard} is out of range`);
  }

  async start(handler: DeliveryHandler): Promise<void> {
    if (this.state !== 'idle') throw new TroupeError('INTERNAL', `transport cannot start while ${this.state}`);
    this.handler = handler;
    this.state = 'running';
    const url = new URL(this.options.url);
    if (!url.searchParams.has('heartbeat')) url.searchParams.set('heartbeat', String(this.options.heartbeatSeconds ?? 10));
    try {
      const connection = await amqp.connect(url.toString(), {
        clientProperties: { connection_name: this.connectionName },
        // Without it, Nagle's algorithm holds small frames (a reply, an ack) back for the peer's delayed ACK:
        // ~40 ms per sequential ask, measured with ops/bench/transport-ask.ts.
        noDelay: true,
        recovery: {
          initialDelay: 100,
          maxDelay: 5_000,
          maxRetries: Infinity,
          initialMaxRetries: this.options.initialConnectRetries ?? 5,
          waitForConnect: false,
          setup: (model: ChannelModel) => this.setup(model),
        },
      });
      this.connection = connection;
      connection.on('disconnect', (err: Error) => this.onDisconnect(err));
      connection.on('connect-failed', (err: Error) => this.log.warn({ err: err.message }, 'broker connection attempt failed'));
      connection.on('error', (err: Error) => this.log.warn({ err: err.message }, 'broker connection error'));
      connection.on('blocked', (reason: string) => this.log.warn({ reason }, 'broker blocked publishing'));
      connection.on('unblocked', () => this.log.info('broker unblocked publishing'));
      await connection.waitForConnect();
    } catch (err) {
      this.state = 'closed';
      await this.connection?.close().catch(() => undefined);
      throw new TroupeError('TRANSPORT_UNAVAILABLE', 'cannot reach the message broker', { reason: (err as Error).message });
    }
  }

  ready(): boolean {
    return this.state === 'running' && this.session !== undefined;
  }

  /** How many times a broker connection has been set up; grows by one on every successful reconnect. */
  get connectionCount(): number {
    return this.connections;
  }

  async ask<R = unknown>(address: string, message: unknown, options: AskOptions): Promise<R> {
    this.liveSession();
    assertAddress(address);
    assertTimeout(options.timeoutMs);
    // A tell to this address made before this ask is waiting for routed asks to settle: this ask goes after it,
    // and the wait counts against its own timeout.
    let timeoutMs = options.timeoutMs;
    const tellTurn = this.tellTurns.get(address);
    if (tellTurn !== undefined) {
      const waitFrom = performance.now();
      if (!(await settlesWithin(tellTurn, timeoutMs))) throw new TroupeError('TRANSPORT_TIMEOUT', undefined, { address, timeoutMs });
      this.liveSession();
      timeoutMs = Math.max(1, Math.round(timeoutMs - (performance.now() - waitFrom)));
    }
    const envelope = createEnvelope({ type: 'ask', to: address, from: this.options.nodeId, deadline: Date.now() + timeoutMs, payload: message });
    const body = encodeEnvelope(envelope);
    const shard = shardOf(address, this.options.shardCount);
    if (this.mayShortcut(shard, address)) return this.askInProcess<R>(shard, body, timeoutMs);
    return new Promise<R>((resolve, reject) => {
      const timer = setTimeout(
        () => this.settleAsk(envelope.id, { error: new TroupeError('TRANSPORT_TIMEOUT', undefined, { address, timeoutMs: options.timeoutMs }) }),
        timeoutMs,
      );
      const route = this.ownerRouting ? this.routes.route(shard, address, this.activeShards.has(shard)) : QUEUE_ROUTE;
      const direct = route !== QUEUE_ROUTE;
      this.routes.sent(address, route);
      this.pending.set(envelope.id, {
        resolve: resolve as (value: unknown) => void, reject, timer, startedAt: performance.now(), address, shard, body, route,
        tellMark: direct ? undefined : this.routes.tellMark(shard),
      });
      if (direct) this.inboxOutbox.add(route, { id: envelope.id, body });
      else this.outbox.add(shard, { id: envelope.id, body });
    });
  }

  /** Publishes one turn's asks to a shard: alone as an `ask`, or together as an `ask-batch` (ask-batch.ts). */
  private sendAsks(shard: number, asks: readonly Outgoing[]): void {
    this.publishAsks(this.names.shardExchange, String(shard), asks, { persistent: true, mandatory: false }, (live, error) => {
      for (const a of live) this.settleAsk(a.id, { error });
    });
  }

  /**
   * Publishes one turn's owner-routed asks to a holder's inbox. `mandatory`: an inbox that is gone (its node died or
   * reconnected) returns the message, and its asks go again through their shard queues (`onReturned`).
   */
  private sendToInbox(inbox: string, asks: readonly Outgoing[]): void {
    // An ask re-sent through the queue while it waited for this turn to end has left this route.
    const still = asks.filter((a) => this.pending.get(a.id)?.route === inbox);
    const sent = this.publishAsks('', inbox, still, { persistent: false, mandatory: true }, () => this.rerouteAsks((ask) => ask.route === inbox));
    if (sent > 0) this.metrics?.routedAsks.inc(sent);
  }

  /** One `ask` or `ask-batch` message; answers how many asks it carried. `failed` gets them if the broker refuses. */
  private publishAsks(
    exchange: string, routingKey: string, asks: readonly Outgoing[], delivery: { persistent: boolean; mandatory: boolean },
    failed: (asks: readonly Outgoing[], error: TroupeError) => void,
  ): number {
    // An ask that timed out or was failed by a disconnect while it waited for the turn to end is not sent.
    const live = asks.filter((a) => this.pending.has(a.id));
    if (live.length === 0) return 0;
    const session = this.session;
    if (session === undefined) {
      for (const a of live) this.settleAsk(a.id, { error: new TroupeError('TRANSPORT_UNAVAILABLE', 'not connected to the message broker') });
      return 0;
    }
    const single = live.length === 1 ? live[0]! : undefined;
    const body = single ? single.body : encodeBatch(live.map((a) => a.body));
    const id = single ? single.id : newMessageId();
    try {
      session.publisher.publish(
        exchange,
        routingKey,
        body,
        {
          ...delivery, replyTo: DIRECT_REPLY_TO, messageId: id, contentType: 'application/json',
          ...(single ? { correlationId: id, type: 'ask' } : { type: ASK_BATCH_TYPE }),
        },
        (err: unknown) => {
          if (err) failed(live, new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker did not accept the message'));
        },
      );
      this.metrics?.askMessages.inc();
      return live.length;
    } catch (err) {
      for (const a of live) this.settleAsk(a.id, { error: new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker channel is closed', { reason: (err as Error).message }) });
      return 0;
    }
  }

  /** Sends the matching owner-routed asks again through their shard queues, in the order they were made. */
  private rerouteAsks(matches: (ask: PendingAsk) => boolean): void {
    for (const [id, ask] of this.pending) {
      if (ask.route === QUEUE_ROUTE || !matches(ask)) continue;
      this.routes.rerouted(ask.address, ask.route);
      ask.route = QUEUE_ROUTE;
      // No tell mark: the copy on the inbox may still answer first, which would prove nothing about the queue.
      ask.tellMark = undefined;
      this.outbox.add(ask.shard, { id, body: ask.body });
      this.metrics?.reroutedAsks.inc();
    }
  }

  /** A routed ask came back unroutable: that inbox is gone. */
  private onReturned(msg: Message): void {
    if (msg.fields.exchange === '') this.inboxGone(msg.fields.routingKey);
  }

  /**
   * An inbox is gone (its node's connection went, and with it what the inbox held): what we knew of its holder is
   * forgotten and the asks sent to it go again through their shard queues. The cluster calls this when a member's
   * heartbeat names a new inbox.
   */
  inboxGone(inbox: string): void {
    const gone = this.routes.forget((holder) => holder.inbox === inbox).add(inbox);
    this.rerouteAsks((ask) => gone.has(ask.route));
  }

  /** This connection's inbox, advertised in the cluster's presence heartbeats; undefined while disconnected or off. */
  get inbox(): string | undefined {
    return this.session?.inbox;
  }

  /**
   * A node died: the cluster heard nothing from it for its presence expiry (decision 0010). What it was holding and
   * the asks waiting on its inbox are lost with it, so those asks go again through their shard queues, where the new
   * holders answer them (an ask may so run twice, as a queue redelivery after a crash can; handlers are idempotent,
   * DESIGN rule 6). A node that leaves in good order is not reported: it forwards what reaches it until its inbox is
   * deleted, and after that asks to its inbox come back as unroutable.
   */
  holderGone(nodeId: string): void {
    // Every inbox of the node, including one an address is still pinned to after its shard moved on.
    const gone = this.routes.forget((holder) => holder.nodeId === nodeId);
    this.rerouteAsks((ask) => gone.has(ask.route));
  }

  async tell(address: string, message: unknown): Promise<void> {
    const session = this.liveSession();
    assertAddress(address);
    const envelope = createEnvelope({ type: 'tell', to: address, from: this.options.nodeId, deadline: Date.now() + this.tellTtlMs, payload: message });
    const shard = shardOf(address, this.options.shardCount);
    const body = encodeEnvelope(envelope);
    // Not awaited unless it must wait: a tell publishes in the caller's turn, ahead of asks made after it.
    const turn = this.tellTurnFor(address);
    const release = turn === undefined ? undefined : await turn;
    let confirmed: Promise<void>;
    try {
      const live = release === undefined ? session : this.liveSession();
      this.outbox.flushKey(shard);
      this.gate.tellSent(shard, address, envelope.id);
      this.routes.tellSent(shard);
      confirmed = this.publishConfirmed(live, this.names.shardExchange, String(shard), body, { persistent: true, messageId: envelope.id, type: 'tell' });
    } finally {
      release?.();
    }
    try {
      await confirmed;
    } catch (err) {
      // Unconfirmed: it may still arrive, but an ask no longer waits for it (it would wait for nothing if it never does).
      this.gate.tellDone(envelope.id);
      throw err;
    }
  }

  /**
   * A tell takes the queue; asks to its address still outstanding on a holder's inbox must be answered first, or it
   * could overtake them. Undefined when nothing is outstanding there. Otherwise resolves, once the tell may go, to
   * the function the tell calls after publishing; asks made meanwhile wait for that (`tellTurns`), so one sender's
   * order holds.
   */
  private tellTurnFor(address: string): Promise<() => void> | undefined {
    const earlierTell = this.tellTurns.get(address);
    if (earlierTell === undefined && !this.routes.hasRoutedAsks(address)) return undefined;
    let resolveTurn!: () => void;
    const turn = new Promise<void>((resolve) => (resolveTurn = resolve));
    this.tellTurns.set(address, turn);
    const published = () => {
      resolveTurn();
      if (this.tellTurns.get(address) === turn) this.tellTurns.delete(address);
    };
    return (async () => {
      await earlierTell;
      await this.routes.offInboxes(address);
      return published;
    })();
  }

  /** True when an ask may run here without the broker (transport/amqp/shortcut.ts states the rule). */
  private mayShortcut(shard: number, address: string): boolean {
    // Rule 2 for asks: none to this address outstanding through the broker, on the queue or on another node's inbox
    // (one sent there before we held the shard must not be overtaken). The gate keeps the rest of the rule.
    return this.shortcut && this.holdsForLocalRun(shard) && this.gate.canShortcut(shard, address) && !this.routes.hasOutstanding(address);
  }

  /** We hold the shard as far as we can tell and are not handing it over: its messages may run here. */
  private holdsForLocalRun(shard: number): boolean {
    return (
      this.state === 'running' && this.session !== undefined && this.activeShards.has(shard) && this.shardConsumers.has(shard) &&
      !this.handingOver.has(shard)
    );
  }

  /**
   * The broker path without the broker: the envelope is encoded and decoded on both legs, the ask waits its turn
   * behind every delivery to its address already taken, an expired one is dropped, and a handover of the shard
   * waits for it (it counts as in flight). A handler crash answers INTERNAL at once: there is no broker to redeliver.
   */
  private askInProcess<R>(shard: number, body: Buffer, timeoutMs: number): Promise<R> {
    const envelope = decodeEnvelope(body);
    const startedAt = performance.now();
    this.inFlight.add(shard);
    return new Promise<R>((resolve, reject) => {
      let settled = false;
      const finish = (outcome: { value: unknown } | { error: TroupeError }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (this.metrics) {
          this.metrics.countAsk('error' in outcome ? outcome.error.code : 'ok');
          this.metrics.askSeconds.observe((performance.now() - startedAt) / 1000);
          this.metrics.inProcessAsks.inc();
        }
        if ('error' in outcome) reject(outcome.error);
        else resolve(outcome.value as R);
      };
      const timer = setTimeout(
        () => finish({ error: new TroupeError('TRANSPORT_TIMEOUT', undefined, { address: envelope.to, timeoutMs }) }),
        timeoutMs,
      );
      void this.mailboxes
        .run(envelope.to, async () => {
          if (Date.now() > envelope.deadline) {
            this.metrics?.countDelivery('expired');
            return;
          }
          let reply: Reply;
          try {
            reply = okReply(await this.handler!(envelope.to, envelope.payload, askDeadline(envelope)));
          } catch (err) {
            if (!(err instanceof TroupeError)) {
              this.log.error({ err, address: envelope.to, messageId: envelope.id }, 'delivery handler crashed on an in-process ask');
              this.metrics?.countDelivery('crashed');
            }
            reply = errorReply(asTroupeError(err));
          }
          this.metrics?.countDelivery(reply.ok ? 'ok' : 'rejected');
          let answer: Reply;
          try {
            answer = readReply(decodeEnvelope(encodeEnvelope(createEnvelope({
              type: 'reply', to: this.options.nodeId, from: this.options.nodeId, deadline: envelope.deadline, correlationId: envelope.id, payload: reply,
            }))));
          } catch (err) {
            this.log.error({ err, address: envelope.to }, 'reply could not be encoded');
            answer = errorReply(asTroupeError(err));
          }
          finish(answer.ok ? { value: answer.value } : { error: fromWire(answer.error) });
        })
        .catch((err: unknown) => finish({ error: asTroupeError(err) }))
        .finally(() => this.settledOne(shard));
    });
  }

  async publish(topic: string, event: unknown): Promise<void> {
    const session = this.liveSession();
    assertTopic(topic);
    const envelope = createEnvelope({ type: 'event', to: topic, from: this.options.nodeId, deadline: Date.now() + EVENT_TTL_MS, payload: event });
    await this.publishConfirmed(session, this.names.eventExchange, topic, encodeEnvelope(envelope), { persistent: false, messageId: envelope.id, type: 'event' });
  }

  async subscribe(pattern: string, handler: EventHandler): Promise<Unsubscribe> {
    if (this.state === 'closed' || this.state === 'draining') throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is closed');
    assertPattern(pattern);
    let handlers = this.subscriptions.get(pattern);
    if (!handlers) this.subscriptions.set(pattern, (handlers = new Set()));
    // A distinct wrapper per call, so subscribing the same function twice needs two unsubscribes.
    const entry: EventHandler = (topic, event) => handler(topic, event);
    handlers.add(entry);
    await this.syncBinding(pattern);
    return async () => {
      const current = this.subscriptions.get(pattern);
      if (!current?.delete(entry)) return;
      if (current.size === 0) this.subscriptions.delete(pattern);
      await this.syncBinding(pattern);
    };
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.state === 'idle') {
      this.state = 'closed';
      return;
    }
    this.state = 'draining';
    const session = this.session;
    if (session) {
      // Stop taking deliveries first; deliveries already received are handled, replied to and acked below.
      const tags = [...session.consumerTags, ...this.shardConsumers.values()];
      await Promise.allSettled(tags.map((tag) => session.consumer.cancel(tag)));
      // Deleting the inbox (rather than cancelling its consumer) leaves no moment in which a routed ask is taken
      // by the broker and dropped: until the delete it reaches us and is forwarded (we are draining), after it
      // it returns to its asker, who sends it through the queue.
      if (session.inbox !== undefined) {
        replyInboxes.delete(session.consumer);
        await session.consumer.deleteQueue(session.inbox).catch(() => undefined);
      }
    }
    await this.mailboxes.idle();
    await Promise.allSettled([...this.forwarding]);
    if (session) acksOf(session.consumer).flush();
    this.state = 'closed';
    this.failPending('transport is closed');
    this.session = undefined;
    this.metrics?.connected.set(0);
    await this.connection?.close().catch((err: unknown) => this.log.warn({ err }, 'closing the broker connection failed'));
  }

  /** Runs on every (re)connect, before the connection counts as up; a throw makes recovery retry with backoff. */
  private async setup(model: ChannelModel): Promise<void> {
    model.on('error', (err: Error) => this.log.warn({ err: err.message }, 'broker connection error'));
    coalesceSocketWrites(model);
    const consumer = await model.createChannel();
    const publisher = await model.createConfirmChannel();
    for (const channel of [consumer, publisher]) {
      channel.on('error', (err: Error) => this.log.warn({ err: err.message }, 'broker channel error'));
      // amqplib recovers connections, not channels: a channel the broker closed (a precondition failure) is
      // recovered by recycling the whole connection, which re-runs this setup.
      channel.on('close', () => this.onChannelClosed(model));
    }
    await declareTopology(consumer, this.topology);
    const wanted = [...this.subscriptions.keys()];
    this.bound.clear();
    await Promise.all(wanted.map((pattern) => consumer.bindQueue(this.names.eventQueue, this.names.eventExchange, pattern)));
    for (const pattern of wanted) this.bound.add(pattern);

    await publisher.consume(DIRECT_REPLY_TO, (msg) => this.onReply(msg), { noAck: true });
    publisher.on('return', (msg: Message) => this.onReturned(msg));
    // Per-consumer limit (global=false): each shard gets its own window, so one busy shard cannot starve the others.
    await consumer.prefetch(this.prefetch, false);
    const consumerTags: string[] = [];
    const events = await consumer.consume(this.names.eventQueue, (msg) => this.onEvent(consumer, msg), { noAck: false });
    consumerTags.push(events.consumerTag);
    // A new connection holds nothing yet: shards are learnt again from deliveries and the broker's consumer list.
    this.shardConsumers.clear();
    this.activeShards.clear();
    this.gate.dropAll();
    // A name of its own per connection: the broker may not yet have dropped the previous connection's inbox.
    const inbox = this.ownerRouting ? this.names.inbox(randomBytes(4).toString('hex')) : undefined;
    const session: Session = { model, publisher, consumer, consumerTags, inbox };
    if (inbox !== undefined) {
      // Exclusive and not durable: it goes with this connection, and an ask routed to it afterwards comes back to
      // its asker as unroutable (`mandatory`). No acks: a routed ask is answered, forwarded or lost with the node.
      await consumer.assertQueue(inbox, { durable: false, exclusive: true, autoDelete: true });
      await consumer.consume(inbox, (msg) => this.onRouted(session, msg), { noAck: true });
      replyInboxes.set(consumer, inbox);
    }
    for (const shard of [...this.wantedShards].sort((a, b) => a - b)) await this.subscribeShard(session, shard);
    if (this.state !== 'running') return;
    this.session = session;
    this.connections += 1;
    this.metrics?.connected.set(1);
    this.log.info({ shards: this.wantedShards.size, connection: this.connectionName }, 'transport connected');
    // Patterns subscribed or dropped while setup ran are reconciled now that the session is visible.
    for (const pattern of new Set([...this.subscriptions.keys(), ...this.bound])) void this.syncBinding(pattern);
  }

  private onDisconnect(err: Error): void {
    this.session = undefined;
    this.metrics?.connected.set(0);
    this.failPending('the broker connection was lost');
    this.loseShards();
    if (this.state === 'running') this.log.warn({ err: err.message }, 'broker connection lost; reconnecting');
  }

  private onChannelClosed(model: ChannelModel): void {
    if (this.state !== 'running' || this.session?.model !== model) return;
    this.log.warn('a broker channel closed; recycling the connection');
    this.session = undefined;
    this.failPending('a broker channel closed');
    this.loseShards();
    model.close().catch(() => undefined);
  }

  private liveSession(): Session {
    if (this.state === 'closed') throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is closed');
    if (this.state === 'idle') throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is not started');
    if (!this.session) throw new TroupeError('TRANSPORT_UNAVAILABLE', 'not connected to the message broker');
    return this.session;
  }

  private publishConfirmed(
    session: Session, exchange: string, routingKey: string, body: Buffer,
    properties: { persistent: boolean; messageId: string; type: string; replyTo?: string; correlationId?: string },
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // A blocked broker (memory or disk alarm) withholds confirms; the caller learns within a bound instead of hanging.
      const timer = setTimeout(
        () => reject(new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker did not confirm in time; the message may still be delivered')),
        this.confirmTimeoutMs,
      );
      try {
        session.publisher.publish(exchange, routingKey, body, { ...properties, contentType: 'application/json' }, (err: unknown) => {
          clearTimeout(timer);
          if (err) reject(new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker did not accept the message'));
          else resolve();
        });
      } catch (err) {
        clearTimeout(timer);
        reject(new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker channel is closed', { reason: (err as Error).message }));
      }
    });
  }

  private settleAsk(id: string, outcome: { value: unknown } | { error: TroupeError }): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    this.routes.settled(pending.address);
    if (this.metrics) {
      this.metrics.countAsk('error' in outcome ? outcome.error.code : 'ok');
      this.metrics.askSeconds.observe((performance.now() - pending.startedAt) / 1000);
    }
    if ('error' in outcome) pending.reject(outcome.error);
    else pending.resolve(outcome.value);
  }

  private failPending(reason: string): void {
    for (const id of [...this.pending.keys()]) this.settleAsk(id, { error: new TroupeError('TRANSPORT_UNAVAILABLE', reason) });
  }

  private onReply(msg: ConsumeMessage | null): void {
    if (msg === null) return; // the reply consumer ends with its channel; onDisconnect/onChannelClosed fail the asks
    if (msg.properties.type === REPLY_BATCH_TYPE) return this.onReplyBatch(msg);
    const correlationId = typeof msg.properties.correlationId === 'string' ? msg.properties.correlationId : undefined;
    let envelope: Envelope;
    try {
      envelope = decodeEnvelope(msg.content);
      if (envelope.type !== 'reply' || envelope.correlationId === undefined) throw new MalformedEnvelopeError(`expected a reply, got ${envelope.type}`);
    } catch (err) {
      this.log.warn({ err: (err as Error).message, correlationId }, 'unreadable reply');
      if (correlationId) this.settleAsk(correlationId, { error: unreadableReply(err) });
      return;
    }
    this.settleFromReply(envelope.correlationId, envelope, this.replierOf(msg, envelope));
  }

  /**
   * A reply for an ask that already timed out (or belongs to no one) finds nothing pending and is dropped. A
   * readable one also tells where the ask's shard is held (`replier`, with the reply's inbox header).
   */
  private settleFromReply(askId: string, envelope: Envelope, replier: Replier): void {
    let reply: Reply;
    try {
      reply = readReply(envelope);
    } catch (err) {
      this.log.warn({ err: (err as Error).message, correlationId: askId }, 'unreadable reply');
      this.settleAsk(askId, { error: unreadableReply(err) });
      return;
    }
    const pending = this.pending.get(askId);
    if (pending !== undefined && this.ownerRouting) this.routes.answered(pending.shard, replier, pending.tellMark);
    this.settleAsk(askId, reply.ok ? { value: reply.value } : { error: fromWire(reply.error) });
  }

  /**
   * Who answered, and the inbox its reply named. Only an inbox of the replying node's own name (as `names.inbox`
   * makes it) counts: a header naming anything else (a shard queue, an asker's reply-to) would send asks there.
   */
  private replierOf(msg: ConsumeMessage, reply: Envelope): Replier {
    const inbox: unknown = msg.properties.headers?.[INBOX_HEADER];
    const own = `${this.prefix}.inbox.${reply.from}.`;
    return typeof inbox === 'string' && inbox.startsWith(own) && INBOX_SUFFIX.test(inbox.slice(own.length))
      ? { nodeId: reply.from, inbox }
      : { nodeId: reply.from };
  }

  private onReplyBatch(msg: ConsumeMessage): void {
    let replies: Envelope[];
    try {
      replies = decodeBatch(msg.content, 'reply');
    } catch (err) {
      // Nothing in it can be trusted to name an ask: those asks time out, as with a lost reply.
      this.log.warn({ err: (err as Error).message }, 'unreadable reply batch');
      return;
    }
    for (const envelope of replies) this.settleFromReply(envelope.correlationId!, envelope, this.replierOf(msg, envelope));
  }

  private onEvent(channel: Channel, msg: ConsumeMessage | null): void {
    if (msg === null) return;
    acksOf(channel).received(msg);
    try {
      const envelope = decodeEnvelope(msg.content);
      if (envelope.type !== 'event') throw new MalformedEnvelopeError(`expected an event, got ${envelope.type}`);
      if (Date.now() <= envelope.deadline) this.dispatchEvent(envelope.to, envelope.payload);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'dropping unreadable event');
    }
    settle(channel, msg, 'ack');
  }

  private dispatchEvent(topic: string, event: unknown): void {
    for (const [pattern, handlers] of this.subscriptions) {
      if (!matchesTopic(pattern, topic)) continue;
      for (const handler of handlers) {
        try {
          handler(topic, event);
        } catch (err) {
          this.log.error({ err, topic, pattern }, 'event handler threw');
        }
      }
    }
  }

  private onDelivery(model: ChannelModel, channel: Channel, shard: number, msg: ConsumeMessage | null): void {
    const queue = this.names.shardQueue(shard);
    if (msg === null) {
      // The broker cancelled us (the queue was deleted): reconnecting re-declares it and consumes again.
      if (this.state === 'running' && this.session?.model === model) {
        this.log.warn({ queue }, 'the broker cancelled a shard consumer; recycling the connection');
        this.onChannelClosed(model);
      }
      return;
    }
    acksOf(channel).received(msg);
    if (msg.properties.type === PROBE_TYPE || msg.properties.type === SEAL_TYPE) {
      // Whoever receives a probe is the shard's active consumer: that is all it says. During a handover it is
      // held and returned with the rest, so it tells the next holder the same. A seal marker is a probe that
      // also opens the in-process shortcut for the node that sent it, once it comes back to that node.
      const parked = this.handingOver.get(shard);
      if (parked !== undefined) parked.push(msg);
      else {
        if (msg.properties.type === SEAL_TYPE) this.gate.sealArrived(shard, msg.properties.messageId);
        this.markActive(shard);
        settle(channel, msg, 'ack');
      }
      return;
    }
    if (msg.properties.type === ASK_BATCH_TYPE) return this.onAskBatch(channel, shard, msg);
    const envelope = this.takeShardMessage(channel, shard, msg, () => {
      const decoded = decodeEnvelope(msg.content);
      if (decoded.type !== 'ask' && decoded.type !== 'tell') throw new MalformedEnvelopeError(`a shard queue carries asks and tells, not ${decoded.type}`);
      this.assertOnShard(decoded, shard);
      return decoded;
    });
    if (envelope === undefined) return;
    // Our own tell is now in its address's turn: an in-process ask to that address can no longer overtake it.
    if (envelope.type === 'tell' && envelope.from === this.options.nodeId) this.gate.tellDone(envelope.id);
    // Likewise an ask we forwarded: routed asks to its address may run here again once it is in its turn.
    if (envelope.type === 'ask') this.forwarded.done(envelope.id);
    this.inFlight.add(shard);
    this.gate.deliveryTaken(shard);
    void this.mailboxes.run(envelope.to, () => this.handleDelivery(channel, msg, envelope)).finally(() => {
      this.gate.deliverySettled(shard);
      this.settledOne(shard);
    });
  }

  /**
   * Reads a shard delivery, or settles it here: an unreadable one goes to the dead-letter queue, and during a
   * handover it waits unacked and goes back to the queue, for the next owner, after the cancel. Undefined then.
   */
  private takeShardMessage<T>(channel: Channel, shard: number, msg: ConsumeMessage, read: () => T): T | undefined {
    let content: T;
    try {
      content = read();
    } catch (err) {
      const queue = this.names.shardQueue(shard);
      this.log.warn({ err: (err as Error).message, queue, messageId: msg.properties.messageId }, 'dead-lettering an unreadable message');
      this.metrics?.countDelivery('malformed');
      settle(channel, msg, 'dead-letter');
      return undefined;
    }
    const parked = this.handingOver.get(shard);
    if (parked !== undefined) {
      parked.push(msg);
      return undefined;
    }
    this.markActive(shard);
    return content;
  }

  /** A message on the wrong shard's queue would run its actor on a node that does not own it: never handled. */
  private assertOnShard(envelope: Envelope, shard: number): void {
    if (shardOf(envelope.to, this.options.shardCount) !== shard) throw new MalformedEnvelopeError(`${envelope.to} does not belong to shard ${shard}`);
  }

  /**
   * Several asks in one message: each runs in its address's turn like a single ask, and the message is acked once
   * all of them have. A batch never goes back to the queue for one ask's crash: that ask is republished alone
   * (confirmed before the batch is acked), and from then on the queue's delivery limit applies to it as to any
   * ask. Only a batch whose node died mid-way is redelivered whole, and then every ask in it runs again (handlers
   * are idempotent, DESIGN rule 6).
   */
  private onAskBatch(channel: Channel, shard: number, msg: ConsumeMessage): void {
    const asks = this.takeShardMessage(channel, shard, msg, () => {
      const decoded = decodeBatch(msg.content, 'ask');
      for (const envelope of decoded) this.assertOnShard(envelope, shard);
      return decoded;
    });
    if (asks === undefined) return;
    let outstanding = asks.length;
    let requeue = false;
    const oneDone = (republished: boolean) => {
      if (!republished) requeue = true;
      if (--outstanding === 0) settle(channel, msg, requeue ? 'requeue' : 'ack');
    };
    for (const envelope of asks) {
      this.inFlight.add(shard);
      this.gate.deliveryTaken(shard);
      void this.mailboxes.run(envelope.to, () => this.handleBatchedAsk(channel, shard, msg, envelope)).then(oneDone, () => oneDone(false)).finally(() => {
        this.gate.deliverySettled(shard);
        this.settledOne(shard);
      });
    }
  }

  /**
   * Asks another node routed here because a reply said we hold their shard. Each runs like a shard delivery when we
   * still hold its shard and nothing waits in that shard's queue (shortcut.ts, rule 3), so it cannot overtake a
   * message already queued there; otherwise it is forwarded to the shard queue, for whoever holds it. A crashing
   * one is forwarded too, so the queue's delivery limit and dead-lettering apply to it as to any ask.
   */
  private onRouted(session: Session, msg: ConsumeMessage | null): void {
    if (msg === null) {
      // The inbox is gone (deleted on shutdown, or with its connection): replies stop naming it.
      if (replyInboxes.get(session.consumer) === session.inbox) replyInboxes.delete(session.consumer);
      return;
    }
    let asks: Envelope[];
    try {
      asks = msg.properties.type === ASK_BATCH_TYPE ? decodeBatch(msg.content, 'ask') : [decodeEnvelope(msg.content)];
      for (const ask of asks) if (ask.type !== 'ask') throw new MalformedEnvelopeError(`an inbox carries asks, not ${ask.type}`);
    } catch (err) {
      // Nothing in it can be trusted to name an asker: those asks time out, as with a lost message.
      this.log.warn({ err: (err as Error).message, messageId: msg.properties.messageId }, 'dropping an unreadable routed ask');
      this.metrics?.countDelivery('unreadable-routed');
      return;
    }
    for (const envelope of asks) {
      const shard = shardOf(envelope.to, this.options.shardCount);
      if (!this.mayServeRouted(shard, envelope.to)) {
        this.forward(session, shard, msg, envelope);
        continue;
      }
      this.inFlight.add(shard);
      this.routedInFlight.add(shard);
      void this.mailboxes
        .run(envelope.to, async () => {
          const outcome = await this.runDelivery(session.consumer, msg, envelope);
          if (outcome === 'answered') return;
          this.log.error({ err: outcome.crashed, address: envelope.to, messageId: envelope.id }, 'delivery handler crashed on a routed ask; forwarding it to its shard queue');
          this.forward(session, shard, msg, envelope);
        })
        .finally(() => {
          this.routedInFlight.remove(shard);
          this.settledOne(shard);
        });
    }
  }

  /**
   * We hold the shard, proven by our own seal marker; no message of it waits in its queue; fewer routed asks of it
   * run than ROUTED_PER_PREFETCH consumer windows (the inbox has no window of its own); and no ask to `address` that
   * we forwarded is still on its way through the queue.
   */
  private mayServeRouted(shard: number, address: string): boolean {
    return (
      this.holdsForLocalRun(shard) && this.gate.sealed(shard) && this.gate.hasCredit(shard) &&
      this.routedInFlight.get(shard) < this.prefetch * ROUTED_PER_PREFETCH && !this.forwarded.waitingFor(address)
    );
  }

  /** Passes a routed ask to its shard queue with the asker's reply-to; the asker learns the holder from the reply. */
  private forward(session: Session, shard: number, msg: ConsumeMessage, envelope: Envelope): void {
    // Only while we hold the shard can the ask come back to us; otherwise every routed ask of it is forwarded anyway.
    if (this.holdsForLocalRun(shard)) this.forwarded.add(envelope.id, envelope.to, shard, envelope.deadline);
    const forwarded = this.republishAsk(session, shard, envelope, msg.properties.replyTo).then(
      () => this.metrics?.forwardedAsks.inc(),
      (err: unknown) => {
        this.forwarded.done(envelope.id);
        this.sendReply(session.consumer, msg, envelope, errorReply(asTroupeError(err)));
      },
    );
    this.forwarding.add(forwarded);
    void forwarded.finally(() => this.forwarding.delete(forwarded));
  }

  /** Resolves false only when a crashed ask could not be republished alone: then the whole batch goes back. */
  private async handleBatchedAsk(channel: Channel, shard: number, msg: ConsumeMessage, envelope: Envelope): Promise<boolean> {
    const outcome = await this.runDelivery(channel, msg, envelope);
    if (outcome === 'answered') return true;
    this.log.error({ err: outcome.crashed, address: envelope.to, messageId: envelope.id }, 'delivery handler crashed on a batched ask; republishing it alone');
    const session = this.session;
    if (session === undefined) return false;
    try {
      await this.republishAsk(session, shard, envelope, msg.properties.replyTo);
      return true;
    } catch (err) {
      this.log.warn({ err: (err as Error).message, address: envelope.to }, 'could not republish a crashed batched ask; the batch is requeued');
      return false;
    }
  }

  /** One ask alone on its shard queue, confirmed, answering to the asker's reply-to: a crash retry or a forward. */
  private republishAsk(session: Session, shard: number, envelope: Envelope, replyTo: unknown): Promise<void> {
    return this.publishConfirmed(session, this.names.shardExchange, String(shard), encodeEnvelope(envelope), {
      persistent: true, messageId: envelope.id, type: 'ask', replyTo: replyTo as string, correlationId: envelope.id,
    });
  }

  private async handleDelivery(channel: Channel, msg: ConsumeMessage, envelope: Envelope): Promise<void> {
    const outcome = await this.runDelivery(channel, msg, envelope);
    if (outcome === 'answered') return settle(channel, msg, 'ack');
    const redeliveries = deliveryCount(msg);
    const final = redeliveries >= this.deliveryLimit;
    this.log.error(
      { err: outcome.crashed, address: envelope.to, messageId: envelope.id, redeliveries },
      final ? 'delivery handler crashed on the last attempt; the message is dead-lettered' : 'delivery handler crashed; the message will be redelivered',
    );
    // On the last attempt the asker gets a definite answer instead of waiting out its deadline.
    if (final && envelope.type === 'ask') this.sendReply(channel, msg, envelope, errorReply(asTroupeError(outcome.crashed)));
    settle(channel, msg, 'requeue');
  }

  /**
   * Runs one ask or tell in its turn: an expired one is dropped, a value or a TroupeError is the answer (sent to an
   * asker). Anything else thrown is a crash, handed back for the caller's redelivery rule.
   */
  private async runDelivery(channel: Channel, msg: ConsumeMessage, envelope: Envelope): Promise<'answered' | { crashed: unknown }> {
    if (Date.now() > envelope.deadline) {
      this.metrics?.countDelivery('expired');
      return 'answered';
    }
    let reply: Reply;
    try {
      reply = okReply(await this.handler!(envelope.to, envelope.payload, askDeadline(envelope)));
    } catch (err) {
      if (!(err instanceof TroupeError)) {
        this.metrics?.countDelivery('crashed');
        return { crashed: err };
      }
      reply = errorReply(err);
    }
    if (envelope.type === 'ask') this.sendReply(channel, msg, envelope, reply);
    this.metrics?.countDelivery(reply.ok ? 'ok' : 'rejected');
    return 'answered';
  }

  private sendReply(channel: Channel, msg: ConsumeMessage, ask: Envelope, reply: Reply): void {
    const replyTo = msg.properties.replyTo;
    if (typeof replyTo !== 'string' || !replyTo.startsWith(`${DIRECT_REPLY_TO}.`)) {
      this.log.warn({ address: ask.to, messageId: ask.id }, 'ask without a direct reply-to address; no reply sent');
      return;
    }
    const envelopeFor = (payload: Reply) =>
      encodeEnvelope(createEnvelope({ type: 'reply', to: ask.from, from: this.options.nodeId, deadline: ask.deadline, correlationId: ask.id, payload }));
    let body: Buffer;
    try {
      body = envelopeFor(reply);
    } catch (err) {
      this.log.error({ err, address: ask.to }, 'reply could not be encoded');
      body = envelopeFor(errorReply(asTroupeError(err)));
    }
    repliesOf(channel, this.log).add(replyTo, { id: ask.id, body });
  }

  /** Makes the broker binding for `pattern` match whether anyone here still wants it; one turn per pattern at a time. */
  private syncBinding(pattern: string): Promise<void> {
    return this.bindingTurns.run(pattern, async () => {
      const session = this.session;
      if (!session) return; // setup binds every wanted pattern when the connection comes back
      const wanted = this.subscriptions.has(pattern);
      if (wanted === this.bound.has(pattern)) return;
      try {
        if (wanted) {
          await session.consumer.bindQueue(this.names.eventQueue, this.names.eventExchange, pattern);
          this.bound.add(pattern);
        } else {
          this.bound.delete(pattern);
          await session.consumer.unbindQueue(this.names.eventQueue, this.names.eventExchange, pattern);
        }
      } catch (err) {
        this.log.warn({ err: (err as Error).message, pattern }, 'event binding change failed; it is redone on reconnect');
      }
    });
  }
}

/** Resolves true when `promise` settles within `ms`, false otherwise. */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    const done = () => {
      clearTimeout(timer);
      resolve(true);
    };
    promise.then(done, done);
  });
}

/** What an asker gets for a reply it cannot read; a peer on another envelope version is named as such. */
function unreadableReply(err: unknown): TroupeError {
  return err instanceof EnvelopeVersionError
    ? new TroupeError('INTERNAL', err.message, { version: err.received })
    : new TroupeError('INTERNAL', 'the reply was malformed');
}

/** Quorum queues count returns in `x-delivery-count`; absent on a first delivery. */
function deliveryCount(msg: ConsumeMessage): number {
  const count: unknown = msg.properties.headers?.['x-delivery-count'];
  return typeof count === 'number' ? count : 0;
}

/** One batcher per consumer channel: every delivery on it is registered there, so acks can go out as `multiple`. */
const ackBatchers = new WeakMap<Channel, AckBatcher>();

const replyOutboxes = new WeakMap<Channel, TurnOutbox<string>>();

/** The inbox a consumer channel's replies name: this node holds the shards of the asks it answers there. */
const replyInboxes = new WeakMap<Channel, string>();

/** One turn's replies per asker on this channel, flushed before the channel's acks (reply first, then ack). */
function repliesOf(channel: Channel, log: Logger): TurnOutbox<string> {
  let outbox = replyOutboxes.get(channel);
  if (!outbox) {
    outbox = new TurnOutbox<string>((replyTo, replies) => {
      const single = replies.length === 1 ? replies[0]! : undefined;
      try {
        const inbox = replyInboxes.get(channel);
        const headers = inbox === undefined ? undefined : { [INBOX_HEADER]: inbox };
        if (single) channel.publish('', replyTo, single.body, { correlationId: single.id, contentType: 'application/json', type: 'reply', headers });
        else channel.publish('', replyTo, encodeBatch(replies.map((r) => r.body)), { contentType: 'application/json', type: REPLY_BATCH_TYPE, headers });
      } catch (err) {
        log.warn({ err: (err as Error).message, replies: replies.length }, 'replies lost with their channel; the askers will time out');
      }
    });
    replyOutboxes.set(channel, outbox);
  }
  return outbox;
}

function acksOf(channel: Channel): AckBatcher {
  let batcher = ackBatchers.get(channel);
  if (!batcher) ackBatchers.set(channel, (batcher = new AckBatcher(channel, () => replyOutboxes.get(channel)?.flush())));
  return batcher;
}

/** Acks after the connection died are meaningless (the broker redelivers); the batcher swallows amqplib's throw. */
function settle(channel: Channel, msg: ConsumeMessage, how: Settlement): void {
  acksOf(channel).settle(msg, how);
}
