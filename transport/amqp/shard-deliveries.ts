import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { asTroupeError } from '../../ops/kernel/errors.js';
import { shardOf } from '../shards.js';
import type { KeyedSerial } from '../keyed-serial.js';
import { MalformedEnvelopeError, decodeEnvelope, errorReply, type Envelope } from '../envelope.js';
import type { TopologyNames } from './topology.js';
import type { BrokerConnection, Session } from './connection.js';
import type { TransportMetrics } from './metrics.js';
import type { ShortcutGate } from './shortcut.js';
import type { ForwardedAsks } from './forwarded-asks.js';
import type { ChannelSettlement } from './settlement.js';
import type { ShardOwnership } from './shard-ownership.js';
import type { DeliveryRunner } from './delivery-runner.js';
import { ASK_BATCH_TYPE, decodeBatch } from './ask-batch.js';
import { PROBE_TYPE, SEAL_TYPE } from './wire.js';

export interface ShardDeliveriesOptions {
  readonly nodeId: string;
  readonly shardCount: number;
  readonly deliveryLimit: number;
  readonly names: TopologyNames;
  readonly link: BrokerConnection;
  readonly ownership: ShardOwnership;
  readonly gate: ShortcutGate;
  readonly forwarded: ForwardedAsks;
  readonly settlement: ChannelSettlement;
  readonly runner: DeliveryRunner;
  /** One turn per address: deliveries to one actor run in arrival order. */
  readonly mailboxes: KeyedSerial;
  readonly log: Logger;
  readonly metrics: TransportMetrics | undefined;
}

/**
 * What arrives on a shard queue this node consumes: asks, tells, ask batches, probes and seal markers. Each ask or
 * tell runs in its address's turn, is replied to and only then acked: the handler has made its work durable by
 * then. Every failure is classified:
 *
 * - handler resolved → reply (asks) and ack;
 * - handler threw a TroupeError → it is an answer: reply with it and ack;
 * - handler crashed (anything else) → nack with requeue; the quorum queue counts the delivery and dead-letters it
 *   after `deliveryLimit` returns, so a poison message stops looping and the shard keeps flowing;
 * - malformed or foreign-version envelope → nack without requeue: straight to the dead-letter queue;
 * - deadline passed → ack and drop: the asker has already timed out.
 *
 * Inside an ask batch each ask is settled as above, except that a crashing ask is republished alone rather than
 * taking its batch back to the queue.
 */
export class ShardDeliveries {
  constructor(private readonly options: ShardDeliveriesOptions) {}

  onDelivery(session: Session, shard: number, msg: ConsumeMessage | null): void {
    const { link, names, ownership, gate, forwarded, settlement, mailboxes, log } = this.options;
    const channel = session.consumer;
    if (msg === null) {
      // The broker cancelled us (the queue was deleted): reconnecting re-declares it and consumes again.
      if (link.state === 'running' && link.session?.model === session.model) {
        log.warn({ queue: names.shardQueue(shard) }, 'the broker cancelled a shard consumer; recycling the connection');
        link.recycle(session.model);
      }
      return;
    }
    settlement.received(channel, msg);
    if (msg.properties.type === PROBE_TYPE || msg.properties.type === SEAL_TYPE) {
      // Whoever receives a probe is the shard's active consumer: that is all it says. During a handover it is
      // held and returned with the rest, so it tells the next holder the same. A seal marker is a probe that
      // also opens the in-process shortcut for the node that sent it, once it comes back to that node.
      if (!ownership.table.park(shard, msg)) {
        if (msg.properties.type === SEAL_TYPE) gate.sealArrived(shard, msg.properties.messageId);
        ownership.prove(shard);
        settlement.settle(channel, msg, 'ack');
      }
      return;
    }
    if (msg.properties.type === ASK_BATCH_TYPE) return this.onAskBatch(channel, shard, msg);
    const envelope = this.take(channel, shard, msg, () => {
      const decoded = decodeEnvelope(msg.content);
      if (decoded.type !== 'ask' && decoded.type !== 'tell') throw new MalformedEnvelopeError(`a shard queue carries asks and tells, not ${decoded.type}`);
      this.assertOnShard(decoded, shard);
      return decoded;
    });
    if (envelope === undefined) return;
    // Our own tell is now in its address's turn: an in-process ask to that address can no longer overtake it.
    if (envelope.type === 'tell' && envelope.from === this.options.nodeId) gate.tellDone(envelope.id);
    // Likewise an ask we forwarded: routed asks to its address may run here again once it is in its turn.
    if (envelope.type === 'ask') forwarded.done(envelope.id);
    ownership.table.begin(shard);
    gate.deliveryTaken(shard);
    void mailboxes.run(envelope.to, () => this.handle(channel, msg, envelope)).finally(() => {
      gate.deliverySettled(shard);
      ownership.table.end(shard);
    });
  }

  /**
   * Reads a shard delivery, or settles it here: an unreadable one goes to the dead-letter queue, and during a
   * handover it waits unacked and goes back to the queue, for the next owner, after the cancel. Undefined then.
   */
  private take<T>(channel: Channel, shard: number, msg: ConsumeMessage, read: () => T): T | undefined {
    let content: T;
    try {
      content = read();
    } catch (err) {
      const queue = this.options.names.shardQueue(shard);
      this.options.log.warn({ err: (err as Error).message, queue, messageId: msg.properties.messageId }, 'dead-lettering an unreadable message');
      this.options.metrics?.countDelivery('malformed');
      this.options.settlement.settle(channel, msg, 'dead-letter');
      return undefined;
    }
    if (this.options.ownership.table.park(shard, msg)) return undefined;
    this.options.ownership.prove(shard);
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
    const { ownership, gate, settlement, mailboxes } = this.options;
    const asks = this.take(channel, shard, msg, () => {
      const decoded = decodeBatch(msg.content, 'ask');
      for (const envelope of decoded) this.assertOnShard(envelope, shard);
      return decoded;
    });
    if (asks === undefined) return;
    let outstanding = asks.length;
    let requeue = false;
    const oneDone = (republished: boolean) => {
      if (!republished) requeue = true;
      if (--outstanding === 0) settlement.settle(channel, msg, requeue ? 'requeue' : 'ack');
    };
    for (const envelope of asks) {
      ownership.table.begin(shard);
      gate.deliveryTaken(shard);
      void mailboxes.run(envelope.to, () => this.handleBatched(channel, shard, msg, envelope)).then(oneDone, () => oneDone(false)).finally(() => {
        gate.deliverySettled(shard);
        ownership.table.end(shard);
      });
    }
  }

  /** Resolves false only when a crashed ask could not be republished alone: then the whole batch goes back. */
  private async handleBatched(channel: Channel, shard: number, msg: ConsumeMessage, envelope: Envelope): Promise<boolean> {
    const { runner, link, log } = this.options;
    const outcome = await runner.run(channel, msg, envelope);
    if (outcome === 'answered') return true;
    log.error({ err: outcome.crashed, address: envelope.to, messageId: envelope.id }, 'delivery handler crashed on a batched ask; republishing it alone');
    const session = link.session;
    if (session === undefined) return false;
    try {
      await runner.republish(session, shard, envelope, msg.properties.replyTo);
      return true;
    } catch (err) {
      log.warn({ err: (err as Error).message, address: envelope.to }, 'could not republish a crashed batched ask; the batch is requeued');
      return false;
    }
  }

  private async handle(channel: Channel, msg: ConsumeMessage, envelope: Envelope): Promise<void> {
    const { runner, settlement, log, deliveryLimit } = this.options;
    const outcome = await runner.run(channel, msg, envelope);
    if (outcome === 'answered') return settlement.settle(channel, msg, 'ack');
    const redeliveries = deliveryCount(msg);
    const final = redeliveries >= deliveryLimit;
    log.error(
      { err: outcome.crashed, address: envelope.to, messageId: envelope.id, redeliveries },
      final ? 'delivery handler crashed on the last attempt; the message is dead-lettered' : 'delivery handler crashed; the message will be redelivered',
    );
    // On the last attempt the asker gets a definite answer instead of waiting out its deadline.
    if (final && envelope.type === 'ask') runner.reply(channel, msg, envelope, errorReply(asTroupeError(outcome.crashed)));
    settlement.settle(channel, msg, 'requeue');
  }
}

/** Quorum queues count returns in `x-delivery-count`; absent on a first delivery. */
function deliveryCount(msg: ConsumeMessage): number {
  const count: unknown = msg.properties.headers?.['x-delivery-count'];
  return typeof count === 'number' ? count : 0;
}
