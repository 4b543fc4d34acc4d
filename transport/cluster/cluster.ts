import { Gauge, type Registry } from 'prom-client';
import type { Logger } from '../../ops/kernel/logger.js';
import type { AmqpTransport } from '../amqp/transport.js';
import { ShardBalancer } from './balancer.js';
import { readBrokerView, type BrokerView } from './broker-view.js';
import { Presence } from './presence.js';
import { shardRoles } from './rendezvous.js';

/**
 * One node's part of the cluster: presence (who is alive), the balancer (which shards to consume or hand over)
 * and the broker view (which consumer RabbitMQ made active). Built by ops/node.ts when the node runs on RabbitMQ.
 * See ops/decisions/0010-cluster-placement.md.
 */
export interface ClusterOptions {
  readonly transport: AmqpTransport;
  readonly amqpUrl: string;
  readonly prefix: string;
  readonly nodeId: string;
  readonly shardCount: number;
  readonly log: Logger;
  readonly passivateShard: (shard: number) => Promise<void>;
  /** Management API base URL and vhost; without them ownership is learnt from deliveries only. */
  readonly management?: { readonly url: string; readonly vhost: string };
  readonly metrics?: Registry;
  /** @default 1000 */
  readonly heartbeatMs?: number;
  /** @default 3000 */
  readonly expireAfterMs?: number;
  /** How often the broker's consumer list is read. @default 2000 */
  readonly brokerPollMs?: number;
}

export interface ClusterNodeStatus {
  readonly nodeId: string;
  readonly url: string | null;
  readonly self: boolean;
  readonly lastSeenMsAgo: number;
  /** Shards this node holds (it knows it is the active consumer). */
  readonly owned: readonly number[];
  /** Shards it consumes, active or standby. */
  readonly consuming: readonly number[];
  /** Shards placement wants it to hold. */
  readonly target: readonly number[];
}

export interface ClusterStatus {
  readonly nodeId: string;
  readonly shardCount: number;
  readonly nodes: readonly ClusterNodeStatus[];
  /** Shards no live node reports holding (moving, idle and not yet seen by the broker view, or ownerless). */
  readonly unclaimed: readonly number[];
  /** Per shard: messages waiting or unacknowledged, when the management API answers. */
  readonly queueDepth: Readonly<Record<string, number>> | null;
}

export class Cluster {
  /** This node's HTTP address, advertised to the others once the server listens. */
  url: string | undefined;
  readonly presence: Presence;
  readonly balancer: ShardBalancer;
  private brokerView: BrokerView | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;
  private warnedAboutManagement = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: ClusterOptions) {
    const { transport } = options;
    this.presence = new Presence({
      url: options.amqpUrl, prefix: options.prefix, nodeId: options.nodeId, log: options.log,
      intervalMs: options.heartbeatMs ?? 1_000, expireAfterMs: options.expireAfterMs ?? 3_000,
      advertise: () => {
        const { consuming, active } = transport.shardStatus();
        return { url: this.url, consuming, owned: active, inbox: transport.inbox };
      },
    });
    this.balancer = new ShardBalancer({
      nodeId: options.nodeId, shardCount: options.shardCount, transport, log: options.log.child({ component: 'balancer' }),
      members: () => this.presence.members(),
      membershipLive: () => this.presence.connected(),
      passivateShard: options.passivateShard,
    });
    if (options.metrics) this.registerMetrics(options.metrics);
  }

  async start(): Promise<void> {
    await this.presence.start();
    const unsubscribeChange = this.presence.onChange(() => this.balancer.tick());
    // Asks routed straight to a node that died go again through the shard queues (owner-routes.ts).
    const unsubscribeExpired = this.presence.onExpired((nodeId) => this.options.transport.holderGone(nodeId));
    const unsubscribeInbox = this.presence.onInboxReplaced((_, inbox) => this.options.transport.inboxGone(inbox));
    this.unsubscribe = () => {
      unsubscribeChange();
      unsubscribeExpired();
      unsubscribeInbox();
    };
    this.balancer.start();
    if (this.options.management) {
      this.pollTimer = setInterval(() => void this.pollBroker(), this.options.brokerPollMs ?? 2_000);
      this.pollTimer.unref?.();
      void this.pollBroker();
    }
  }

  async close(): Promise<void> {
    this.balancer.stop();
    this.unsubscribe?.();
    if (this.pollTimer) clearInterval(this.pollTimer);
    await this.presence.close();
  }

  status(): ClusterStatus {
    const members = this.presence.members();
    const roles = shardRoles(this.options.shardCount, members.map((m) => m.nodeId));
    const now = Date.now();
    const claimed = new Set<number>();
    const nodes = members.map((member): ClusterNodeStatus => {
      for (const shard of member.owned) claimed.add(shard);
      return {
        nodeId: member.nodeId, url: member.url ?? null, self: member.self, lastSeenMsAgo: Math.max(0, now - member.lastSeenAt),
        owned: member.owned, consuming: member.consuming,
        target: roles.flatMap((role, shard) => (role.primary === member.nodeId ? [shard] : [])),
      };
    });
    const unclaimed = roles.flatMap((_, shard) => (claimed.has(shard) ? [] : [shard]));
    const view = this.brokerView;
    const queueDepth = view
      ? Object.fromEntries(roles.map((_, shard) => [String(shard), view.depth.get(this.options.transport.names.shardQueue(shard)) ?? 0]))
      : null;
    return { nodeId: this.options.nodeId, shardCount: this.options.shardCount, nodes, unclaimed, queueDepth };
  }

  private async pollBroker(): Promise<void> {
    const management = this.options.management;
    if (!management || this.polling) return;
    this.polling = true;
    try {
      this.brokerView = await readBrokerView({
        managementUrl: management.url, vhost: management.vhost, queuePrefix: `${this.options.prefix}.shard.`, log: this.options.log,
      });
      this.options.transport.noteBrokerView(this.brokerView.activeTags);
    } catch (err) {
      if (!this.warnedAboutManagement) {
        this.warnedAboutManagement = true;
        this.options.log.warn({ err: (err as Error).message }, 'RabbitMQ management API unreadable; shard ownership is learnt from deliveries only');
      }
    } finally {
      this.polling = false;
    }
  }

  private registerMetrics(registry: Registry): void {
    const transport = this.options.transport;
    const names = transport.names;
    const registers = [registry];
    new Gauge({
      name: 'troupe_shards_owned', help: 'Shards this node holds (it is the single active consumer)', registers,
      collect() { this.set(transport.shardStatus().active.length); },
    });
    const cluster = this;
    new Gauge({
      name: 'troupe_shard_owned', help: '1 for each shard this node holds, 0 for one it consumes as a standby', labelNames: ['shard'], registers,
      collect() {
        this.reset();
        const { consuming, active } = transport.shardStatus();
        const held = new Set(active);
        for (const shard of consuming) this.set({ shard: String(shard) }, held.has(shard) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'troupe_cluster_members', help: 'Live cluster members this node hears, itself included', registers,
      collect() { this.set(cluster.presence.members().length); },
    });
    new Gauge({
      name: 'troupe_shard_queue_messages', help: 'Messages waiting or unacknowledged on the shards this node holds (broker view, lags by its stats interval)',
      labelNames: ['shard'], registers,
      collect() {
        this.reset();
        const view = cluster.brokerView;
        if (!view) return;
        for (const shard of transport.shardStatus().active) this.set({ shard: String(shard) }, view.depth.get(names.shardQueue(shard)) ?? 0);
      },
    });
  }
}
