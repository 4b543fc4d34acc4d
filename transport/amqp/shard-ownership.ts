import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { KeyedSerial } from '../keyed-serial.js';
import type { TopologyNames } from './topology.js';
import type { BrokerConnection, Session } from './connection.js';
import type { ShortcutGate } from './shortcut.js';
import type { ForwardedAsks } from './forwarded-asks.js';
import type { ChannelSettlement } from './settlement.js';
import { ShardTable } from './shard-table.js';
import { PROBE_TYPE, SEAL_TYPE } from './wire.js';

/** Which shards this node subscribes to, and which of those it knows it holds (ops/decisions/0010-cluster-placement.md). */
export interface ShardStatus {
  /** Shards with a consumer of ours, active or standby. */
  readonly consuming: readonly number[];
  /** Shards whose single active consumer is ours, learnt from a delivery or from the broker's consumer list. */
  readonly active: readonly number[];
  /** Active shards whose seal marker came back to us: proven ours, so routed and in-process asks run here. */
  readonly proven: readonly number[];
}

/** Our consumer of a shard queue: the channel it is on and its tag. */
export interface ShardConsumer {
  readonly channel: Channel;
  readonly tag: string;
}

export interface ShardOwnershipOptions {
  readonly shardCount: number;
  readonly initial: readonly number[];
  readonly connectionName: string;
  readonly names: TopologyNames;
  readonly link: BrokerConnection;
  readonly gate: ShortcutGate;
  readonly forwarded: ForwardedAsks;
  readonly settlement: ChannelSettlement;
  /** Whether seals are sent at all: only the shortcut and owner routing run on them. */
  readonly sealing: boolean;
  readonly log: Logger;
  readonly onShardsLost: ((shards: readonly number[]) => void) | undefined;
  /** Where a shard consumer's deliveries go (shard-deliveries.ts). */
  readonly onDelivery: (session: Session, shard: number, msg: ConsumeMessage | null) => void;
}

/**
 * This node's shards on the broker: consuming them (as a standby while another node holds them), learning that it
 * holds them (deliveries, probes, seals, the broker's consumer list), handing them over, losing them with the
 * connection. Each shard's state is one row of the state table in shard-table.ts.
 */
export class ShardOwnership {
  readonly table: ShardTable<ShardConsumer, ConsumeMessage>;
  /** One consume or release at a time per shard. */
  private readonly turns = new KeyedSerial();

  constructor(private readonly options: ShardOwnershipOptions) {
    for (const shard of options.initial) this.assertShard(shard);
    this.table = new ShardTable(options.shardCount, options.initial);
  }

  /** The shards this node consumes and those it knows it holds, both sorted. */
  status(): ShardStatus {
    const active = this.table.active();
    return { consuming: this.table.consuming(), active, proven: active.filter((shard) => this.options.gate.sealed(shard)) };
  }

  /** Our consumer tag per shard on the current connection, to match against the broker's consumer list. */
  consumerTags(): Map<number, string> {
    const tags = new Map<number, string>();
    for (const [shard, consumer] of this.table.consumers()) tags.set(shard, consumer.tag);
    return tags;
  }

  /**
   * Subscribes to a shard (as a standby if another node holds it; RabbitMQ activates us when that consumer goes).
   * Kept across reconnects.
   */
  consume(shard: number): Promise<void> {
    this.assertShard(shard);
    return this.turns.run(String(shard), async () => {
      this.table.want(shard);
      const session = this.options.link.session;
      if (session && this.table.phase(shard) === 'wanted') await this.subscribe(session, shard);
    });
  }

  /**
   * Hands a shard over: deliveries arriving from now on are held back, the ones already running finish (they are
   * acked and answered), `beforeCancel` runs (the node passivates the shard's actors, so their state is all in
   * storage), and only then is the consumer cancelled, which makes RabbitMQ activate the next consumer. The held
   * deliveries return to the queue for it. Requeued returns count towards the delivery limit, so a message survives
   * `deliveryLimit` handovers in a row.
   */
  release(shard: number, beforeCancel: () => Promise<void> = async () => undefined): Promise<void> {
    this.assertShard(shard);
    return this.turns.run(String(shard), async () => {
      const { gate, forwarded, settlement, log } = this.options;
      // From here on asks to this shard take the broker, behind the in-process ones the drain below waits for.
      gate.drop(shard);
      forwarded.dropShard(shard);
      const handover = this.table.release(shard);
      if (handover === undefined) return;
      const { channel, tag } = handover.consumer;
      try {
        await this.table.drained(shard);
        await beforeCancel();
        settlement.flush(channel);
        await channel.cancel(tag);
      } catch (err) {
        log.warn({ err: (err as Error).message, shard }, 'shard handover did not finish cleanly; the broker returns its messages');
      } finally {
        this.table.handedOver(shard);
        for (const msg of handover.parked) settlement.settle(channel, msg, 'requeue');
      }
      if (handover.held) log.info({ shard, returned: handover.parked.length }, 'handed a shard over');
    });
  }

  /**
   * Folds in the broker's consumer list (management API), which lags by its statistics interval: it may add a
   * shard we hold but have had no delivery on, and removes one only if no delivery has proved it for `staleMs`.
   */
  noteBrokerView(activeTags: ReadonlySet<string>, staleMs = 10_000): void {
    const now = Date.now();
    for (const [shard, { tag }] of this.table.consumers()) {
      const phase = this.table.phase(shard);
      if (phase === 'handing-over') continue;
      if (activeTags.has(tag)) {
        if (phase === 'standby') this.prove(shard);
      } else {
        const provenAt = this.table.provenAt(shard);
        if (provenAt !== undefined && now - provenAt > staleMs && this.table.stale(shard)) {
          this.options.gate.drop(shard);
          this.options.forwarded.dropShard(shard);
        }
      }
    }
  }

  /**
   * Sends an empty probe through a shard queue so that its active consumer learns it holds the shard without
   * waiting for real traffic (an idle shard after a failover or handover). Best effort.
   */
  probe(shard: number): void {
    this.assertShard(shard);
    const session = this.options.link.session;
    if (!session) return;
    try {
      session.publisher.publish(this.options.names.shardExchange, String(shard), Buffer.alloc(0), { type: PROBE_TYPE, persistent: false }, () => undefined);
    } catch {
      // the channel is gone; the next connection probes again
    }
  }

  /** A delivery, probe or the broker's list says ours is the shard's active consumer. */
  prove(shard: number): void {
    const outcome = this.table.prove(shard, Date.now());
    if (outcome === 'refused') return;
    if (outcome === 'newly-held') this.options.log.info({ shard }, 'now holding a shard');
    // The seal is the proof both the shortcut and routed asks run on: a belief from the broker's lagging consumer
    // list alone could name a shard we have just handed over.
    if (this.options.sealing) this.sendSeal(shard);
  }

  /** We hold the shard as far as we can tell and are not handing it over: its messages may run here. */
  holdsForLocalRun(shard: number): boolean {
    const link = this.options.link;
    return link.state === 'running' && link.session !== undefined && this.table.holding(shard);
  }

  /** A new connection holds nothing yet: shards are learnt again from deliveries and the broker's consumer list. */
  reset(): void {
    this.table.loseAll();
    this.options.gate.dropAll();
  }

  /** Subscribes every wanted shard on a new connection, lowest first. */
  async subscribeWanted(session: Session): Promise<void> {
    for (let shard = this.table.firstWanted(); shard !== undefined; shard = this.table.firstWanted()) await this.subscribe(session, shard);
  }

  /** The connection is gone, and with it every shard we held: RabbitMQ has already activated the standbys. */
  lose(): void {
    const lost = this.table.loseAll();
    this.options.gate.dropAll();
    this.options.forwarded.dropAll();
    if (lost.length === 0 || this.options.link.state !== 'running') return;
    this.options.log.warn({ shards: lost }, 'lost the broker connection while holding shards; their actors stop here');
    try {
      this.options.onShardsLost?.(lost);
    } catch (err) {
      this.options.log.error({ err }, 'onShardsLost threw');
    }
  }

  assertShard(shard: number): void {
    if (!Number.isInteger(shard) || shard < 0 || shard >= this.options.shardCount) throw new TroupeError('INTERNAL', `shard ${shard} is out of range`);
  }

  /** Sends a seal marker through the shard's queue unless one is open or on its way (shortcut.ts, rule 1). */
  private sendSeal(shard: number): void {
    const { link, gate, names } = this.options;
    const session = link.session;
    if (!session || link.state !== 'running') return;
    const token = gate.beginSeal(shard);
    if (token === undefined) return;
    try {
      session.publisher.publish(names.shardExchange, String(shard), Buffer.alloc(0), { type: SEAL_TYPE, messageId: token, persistent: false }, () => undefined);
    } catch {
      // the channel is gone; the seal is dropped with the connection and sent again on the next one
    }
  }

  private async subscribe(session: Session, shard: number): Promise<void> {
    // A readable tag: the broker's consumer list then says which node holds which shard.
    const tag = `${this.options.connectionName}:shard.${shard}`;
    if (!this.table.consume(shard, { channel: session.consumer, tag })) return;
    try {
      await session.consumer.consume(this.options.names.shardQueue(shard), (msg) => this.options.onDelivery(session, shard, msg), {
        noAck: false, consumerTag: tag,
      });
    } catch (err) {
      this.table.consumeFailed(shard);
      throw err;
    }
  }
}
