import type { Channel, ChannelModel, ConsumeMessage, RecoveringChannelModel } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';

/**
 * Cluster membership by presence: every node publishes a heartbeat on the fanout exchange `<prefix>.presence`
 * every `intervalMs` (its id, HTTP address, the shards it consumes and the ones it knows it holds) and hears
 * everyone else's on a private, auto-deleted queue. A member unheard for `expireAfterMs` is gone; a node shutting
 * down says so at once. Heartbeats are advisory: RabbitMQ alone decides which consumer holds a shard, so a wrong
 * membership view can only cause an unnecessary handover, never two owners (ops/decisions/0010-cluster-placement.md).
 */
export interface Advertisement {
  readonly url: string | undefined;
  readonly consuming: readonly number[];
  readonly owned: readonly number[];
  /** The node's current inbox for owner-routed asks (transport/amqp/owner-routes.ts); new on every connection. */
  readonly inbox?: string | undefined;
}

export interface Member extends Advertisement {
  readonly nodeId: string;
  /** Local clock time (ms) of the last heartbeat heard from it. */
  readonly lastSeenAt: number;
  readonly self: boolean;
}

export interface PresenceOptions {
  readonly url: string;
  readonly prefix: string;
  readonly nodeId: string;
  readonly log: Logger;
  readonly advertise: () => Advertisement;
  /** @default 1000 */
  readonly intervalMs?: number;
  /** @default 3000 */
  readonly expireAfterMs?: number;
}

interface Heartbeat extends Advertisement {
  readonly v: 1;
  readonly nodeId: string;
  readonly leaving: boolean;
}

/** Bounds on what a heartbeat may carry, so a hostile or broken peer cannot make us hold much. */
const MAX_HEARTBEAT_BYTES = 64 * 1024;
const MAX_SHARDS = 1024;
const NODE_ID = /^[A-Za-z0-9._-]{1,64}$/;

export class Presence {
  readonly exchange: string;
  readonly queue: string;
  private readonly log: Logger;
  private readonly intervalMs: number;
  private readonly expireAfterMs: number;
  private readonly peers = new Map<string, Member>();
  private readonly listeners = new Set<() => void>();
  private readonly expiredListeners = new Set<(nodeId: string) => void>();
  private readonly inboxListeners = new Set<(nodeId: string, inbox: string) => void>();
  private connection: RecoveringChannelModel | undefined;
  private channel: Channel | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: PresenceOptions) {
    this.exchange = `${options.prefix}.presence`;
    this.queue = `${options.prefix}.presence.${options.nodeId}`;
    this.log = options.log.child({ component: 'presence' });
    this.intervalMs = options.intervalMs ?? 1_000;
    this.expireAfterMs = options.expireAfterMs ?? 3_000;
  }

  async start(): Promise<void> {
    const url = new URL(this.options.url);
    if (!url.searchParams.has('heartbeat')) url.searchParams.set('heartbeat', '10');
    // Loaded here rather than with the module, like the transport's connection (decision 0057).
    const { default: amqp } = await import('amqplib');
    this.connection = await amqp.connect(url.toString(), {
      clientProperties: { connection_name: `${this.options.prefix}:${this.options.nodeId}:presence` },
      noDelay: true,
      recovery: {
        initialDelay: 100, maxDelay: 2_000, maxRetries: Infinity, initialMaxRetries: 5, waitForConnect: false,
        setup: (model: ChannelModel) => this.setup(model),
      },
    });
    this.connection.on('disconnect', () => {
      this.channel = undefined;
      // Cut off from the broker we cannot tell who is alive; forgetting everyone makes the balancer hold still.
      this.peers.clear();
      this.notify();
    });
    this.connection.on('error', (err: Error) => this.log.warn({ err: err.message }, 'presence connection error'));
    await this.connection.waitForConnect();
    this.timer = setInterval(() => {
      this.beat(false);
      this.expire();
    }, this.intervalMs);
    this.timer.unref?.();
    this.beat(false);
  }

  /** Live members including this node, by node id. */
  members(): Member[] {
    this.expire();
    const self: Member = { ...this.options.advertise(), nodeId: this.options.nodeId, lastSeenAt: Date.now(), self: true };
    return [self, ...this.peers.values()].sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
  }

  /** True while this node can hear heartbeats (its presence connection is up). */
  connected(): boolean {
    return this.channel !== undefined;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Called with a member's previous inbox when its heartbeat names a new one: its transport reconnected, or it
   * restarted under the same id faster than the expiry. What was in the previous inbox is lost either way.
   */
  onInboxReplaced(listener: (nodeId: string, inbox: string) => void): () => void {
    this.inboxListeners.add(listener);
    return () => this.inboxListeners.delete(listener);
  }

  /**
   * Called with a member heard while we were connected and then unheard for the expiry: it died or was cut off.
   * Not for a member that said it was leaving, nor for the members forgotten when our own connection drops.
   */
  onExpired(listener: (nodeId: string) => void): () => void {
    this.expiredListeners.add(listener);
    return () => this.expiredListeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.beat(true);
    await this.connection?.close().catch(() => undefined);
  }

  private async setup(model: ChannelModel): Promise<void> {
    const channel = await model.createChannel();
    channel.on('error', (err: Error) => this.log.warn({ err: err.message }, 'presence channel error'));
    channel.on('close', () => {
      if (this.channel === channel) this.channel = undefined;
      if (!this.closed) model.close().catch(() => undefined);
    });
    // Deleted by the broker once the last node's queue is gone: a stopped cluster leaves nothing behind.
    await channel.assertExchange(this.exchange, 'fanout', { durable: false, autoDelete: true });
    await channel.assertQueue(this.queue, {
      exclusive: true, autoDelete: true, durable: false,
      // A heartbeat older than the expiry says nothing; a backlog must not grow while this node is slow.
      arguments: { 'x-message-ttl': this.expireAfterMs, 'x-max-length': 1_000, 'x-overflow': 'drop-head' },
    });
    await channel.bindQueue(this.queue, this.exchange, '');
    await channel.consume(this.queue, (msg) => this.onHeartbeat(msg), { noAck: true });
    this.channel = channel;
  }

  private beat(leaving: boolean): void {
    const channel = this.channel;
    if (!channel) return;
    const heartbeat: Heartbeat = { v: 1, nodeId: this.options.nodeId, leaving, ...this.options.advertise() };
    try {
      channel.publish(this.exchange, '', Buffer.from(JSON.stringify(heartbeat)), { contentType: 'application/json', expiration: String(this.expireAfterMs) });
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'heartbeat not sent');
    }
  }

  private onHeartbeat(msg: ConsumeMessage | null): void {
    if (msg === null) return;
    const heartbeat = parseHeartbeat(msg.content);
    if (heartbeat === undefined) {
      this.log.warn('ignoring a malformed presence heartbeat');
      return;
    }
    if (heartbeat.nodeId === this.options.nodeId) return;
    const known = this.peers.has(heartbeat.nodeId);
    if (heartbeat.leaving) {
      if (this.peers.delete(heartbeat.nodeId)) {
        this.log.info({ member: heartbeat.nodeId }, 'cluster member left');
        this.notify();
      }
      return;
    }
    const previous = this.peers.get(heartbeat.nodeId);
    this.peers.set(heartbeat.nodeId, {
      nodeId: heartbeat.nodeId, url: heartbeat.url, consuming: heartbeat.consuming, owned: heartbeat.owned,
      lastSeenAt: Date.now(), self: false, ...(heartbeat.inbox !== undefined ? { inbox: heartbeat.inbox } : {}),
    });
    const replaced = previous?.inbox;
    if (replaced !== undefined && replaced !== heartbeat.inbox) this.tellListeners(this.inboxListeners, (listener) => listener(heartbeat.nodeId, replaced));
    if (!known) this.log.info({ member: heartbeat.nodeId }, 'cluster member joined');
    if (!known || !sameShards(previous?.consuming, heartbeat.consuming) || !sameShards(previous?.owned, heartbeat.owned)) this.notify();
  }

  private expire(): void {
    const cutoff = Date.now() - this.expireAfterMs;
    const expired: string[] = [];
    for (const [nodeId, member] of this.peers) {
      if (member.lastSeenAt >= cutoff) continue;
      this.peers.delete(nodeId);
      this.log.warn({ member: nodeId, unseenMs: Date.now() - member.lastSeenAt }, 'cluster member unseen; considered gone');
      expired.push(nodeId);
    }
    if (expired.length === 0) return;
    this.notify();
    for (const nodeId of expired) this.tellListeners(this.expiredListeners, (listener) => listener(nodeId));
  }

  private tellListeners<L>(listeners: ReadonlySet<L>, call: (listener: L) => void): void {
    for (const listener of listeners) {
      try {
        call(listener);
      } catch (err) {
        this.log.error({ err }, 'presence listener threw');
      }
    }
  }

  private notify(): void {
    this.tellListeners(this.listeners, (listener) => listener());
  }
}

function sameShards(a: readonly number[] | undefined, b: readonly number[]): boolean {
  return a !== undefined && a.length === b.length && a.every((shard, i) => shard === b[i]);
}

/** Reads a heartbeat defensively: anything unexpected makes the whole message void. */
export function parseHeartbeat(body: Buffer): Heartbeat | undefined {
  if (body.length > MAX_HEARTBEAT_BYTES) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (v.v !== 1 || typeof v.nodeId !== 'string' || !NODE_ID.test(v.nodeId) || typeof v.leaving !== 'boolean') return undefined;
  if (v.url !== undefined && (typeof v.url !== 'string' || v.url.length > 2048)) return undefined;
  if (v.inbox !== undefined && (typeof v.inbox !== 'string' || v.inbox.length > 255)) return undefined;
  const consuming = shardList(v.consuming);
  const owned = shardList(v.owned);
  if (consuming === undefined || owned === undefined) return undefined;
  return {
    v: 1, nodeId: v.nodeId, leaving: v.leaving, url: v.url as string | undefined, consuming, owned,
    ...(v.inbox !== undefined ? { inbox: v.inbox as string } : {}),
  };
}

function shardList(value: unknown): number[] | undefined {
  if (!Array.isArray(value) || value.length > MAX_SHARDS) return undefined;
  if (!value.every((s) => Number.isInteger(s) && (s as number) >= 0 && (s as number) < MAX_SHARDS)) return undefined;
  return [...new Set(value as number[])].sort((a, b) => a - b);
}
