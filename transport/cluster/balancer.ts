import type { Logger } from '../../ops/kernel/logger.js';
import type { ShardStatus } from '../amqp/transport.js';
import type { Member } from './presence.js';
import { shardRoles } from './rendezvous.js';

/** The part of AmqpTransport the balancer drives. */
export interface ShardConsumers {
  ready(): boolean;
  shardStatus(): ShardStatus;
  consumeShard(shard: number): Promise<void>;
  releaseShard(shard: number, beforeCancel?: () => Promise<void>): Promise<void>;
  probeShard(shard: number): void;
}

export interface BalancerOptions {
  readonly nodeId: string;
  readonly shardCount: number;
  readonly transport: ShardConsumers;
  /** Live membership including this node; empty or without peers while cut off from the broker. */
  readonly members: () => Member[];
  /** True while the membership view can be trusted (presence connection up). */
  readonly membershipLive: () => boolean;
  /** Stops the actors of a shard on this node, their state safely in storage, before the consumer is cancelled. */
  readonly passivateShard: (shard: number) => Promise<void>;
  readonly log: Logger;
}

export type ShardAction =
  | { readonly kind: 'consume'; readonly shard: number }
  /** Leave the shard: cancel our consumer (after draining and passivating, if we hold it). */
  | { readonly kind: 'release'; readonly shard: number }
  /** We hold it as the backup and the primary is waiting: hand it over and stay on as a standby. */
  | { readonly kind: 'handover'; readonly shard: number };

/**
 * The placement rule, pure. Each shard wants two consumers, its rendezvous primary and backup among the live
 * members; RabbitMQ's single-active-consumer picks which one holds it. A node:
 * - consumes the shards it is primary or backup for;
 * - leaves the others, but a shard it holds only once its primary is consuming it, so that the cancel activates
 *   the right node instead of leaving the queue to nobody or to another bystander;
 * - hands over a shard it holds as backup once the primary is consuming it, and stays on as standby.
 * A shard is never released while the primary's consumer is unconfirmed, so a wrong view costs time, not messages.
 */
export function planShards(nodeId: string, shardCount: number, members: readonly Member[], status: ShardStatus): ShardAction[] {
  const roles = shardRoles(shardCount, members.map((m) => m.nodeId));
  const consuming = new Set(status.consuming);
  const active = new Set(status.active);
  const consumingOf = new Map(members.map((m) => [m.nodeId, new Set(m.consuming)]));
  const actions: ShardAction[] = [];
  roles.forEach((role, shard) => {
    const mine = role.primary === nodeId || role.backup === nodeId;
    const primaryWaiting = role.primary !== undefined && role.primary !== nodeId && (consumingOf.get(role.primary)?.has(shard) ?? false);
    if (mine && !consuming.has(shard)) actions.push({ kind: 'consume', shard });
    else if (!mine && consuming.has(shard) && (!active.has(shard) || primaryWaiting)) actions.push({ kind: 'release', shard });
    else if (role.backup === nodeId && active.has(shard) && primaryWaiting) actions.push({ kind: 'handover', shard });
  });
  return actions;
}

const PROBE_EVERY_MS = 2_000;

/**
 * Applies `planShards` every `intervalMs` and whenever membership changes. Several shards move at once, but each
 * shard has at most one action running.
 */
export class ShardBalancer {
  private readonly busy = new Set<number>();
  private readonly probedAt = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: BalancerOptions, private readonly intervalMs = 500) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref?.();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  /** Idle when no shard is moving; tests and shutdown wait for it. */
  get moving(): number {
    return this.busy.size;
  }

  tick(): void {
    const { transport, log } = this.options;
    if (this.stopped || !transport.ready() || !this.options.membershipLive()) return;
    const members = this.options.members();
    const status = transport.shardStatus();
    this.probeUnclaimed(members, status);
    const actions = planShards(this.options.nodeId, this.options.shardCount, members, status);
    for (const action of actions) {
      if (this.busy.has(action.shard)) continue;
      this.busy.add(action.shard);
      this.apply(action)
        .catch((err: unknown) => log.warn({ err, ...action }, 'shard placement step failed; retried on the next tick'))
        .finally(() => this.busy.delete(action.shard));
    }
  }

  /**
   * A shard nobody claims to hold may be held by a consumer that has had no delivery since it became active (an
   * idle shard after a failover or handover). A probe through the queue reaches exactly that consumer.
   */
  private probeUnclaimed(members: readonly Member[], status: ShardStatus): void {
    const claimed = new Set(members.flatMap((m) => m.owned));
    const now = Date.now();
    for (const shard of status.consuming) {
      if (claimed.has(shard) || this.busy.has(shard) || now - (this.probedAt.get(shard) ?? 0) < PROBE_EVERY_MS) continue;
      this.probedAt.set(shard, now);
      this.options.transport.probeShard(shard);
    }
  }

  private async apply(action: ShardAction): Promise<void> {
    const { transport, passivateShard, log } = this.options;
    const passivate = () => passivateShard(action.shard);
    switch (action.kind) {
      case 'consume':
        await transport.consumeShard(action.shard);
        return;
      case 'release':
        await transport.releaseShard(action.shard, passivate);
        transport.probeShard(action.shard);
        return;
      case 'handover':
        log.info({ shard: action.shard }, 'handing a shard to its primary');
        await transport.releaseShard(action.shard, passivate);
        // The next holder learns it at once instead of on its first real message.
        transport.probeShard(action.shard);
        // Back in the queue's consumer list, now behind the primary: the standby that takes over if it dies.
        if (!this.stopped) await transport.consumeShard(action.shard);
        return;
    }
  }
}
