import type { ConsumeMessage } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { asTroupeError } from '../../ops/kernel/errors.js';
import { ChurnSet } from '../../ops/kernel/churn-map.js';
import { shardOf } from '../shards.js';
import { Tally } from '../tally.js';
import type { KeyedSerial } from '../keyed-serial.js';
import { MalformedEnvelopeError, decodeEnvelope, errorReply, type Envelope } from '../envelope.js';
import type { Session } from './connection.js';
import type { TransportMetrics } from './metrics.js';
import type { ShortcutGate } from './shortcut.js';
import type { ForwardedAsks } from './forwarded-asks.js';
import type { ChannelSettlement } from './settlement.js';
import type { ShardOwnership } from './shard-ownership.js';
import type { DeliveryRunner } from './delivery-runner.js';
import { ASK_BATCH_TYPE, decodeBatch } from './ask-batch.js';

/**
 * Routed asks of one shard running at once on its holder, in shard-consumer windows (`prefetch`). Routed asks carry
 * no window: past this a holder forwards them, and the queue's window holds them back. Several windows, because a
 * routed ask is an ask that would otherwise have been batched up to 64 to a message through the same window.
 */
const ROUTED_PER_PREFETCH = 4;

export interface RoutedAsksOptions {
  readonly shardCount: number;
  readonly prefetch: number;
  readonly ownership: ShardOwnership;
  readonly gate: ShortcutGate;
  readonly forwarded: ForwardedAsks;
  readonly settlement: ChannelSettlement;
  readonly runner: DeliveryRunner;
  readonly mailboxes: KeyedSerial;
  readonly log: Logger;
  readonly metrics: TransportMetrics | undefined;
}

/**
 * Asks another node routed to this connection's inbox because a reply said we hold their shard (owner-routes.ts,
 * decision 0019): run here when that cannot overtake anything, forwarded to their shard queue otherwise.
 */
export class RoutedAsks {
  /** Routed asks being forwarded to their shard queue; shutdown waits for them. */
  private readonly forwarding = new ChurnSet<Promise<void>>();
  /** Shard → routed asks running here. */
  private readonly running = new Tally<number>();

  constructor(private readonly options: RoutedAsksOptions) {}

  /**
   * Each runs like a shard delivery when we still hold its shard and nothing waits in that shard's queue
   * (shortcut.ts, rule 3), so it cannot overtake a message already queued there; otherwise it is forwarded to the
   * shard queue, for whoever holds it. A crashing one is forwarded too, so the queue's delivery limit and
   * dead-lettering apply to it as to any ask.
   */
  onRouted(session: Session, msg: ConsumeMessage | null): void {
    const { ownership, runner, mailboxes, log, metrics } = this.options;
    if (msg === null) {
      // The inbox is gone (deleted on shutdown, or with its connection): replies stop naming it.
      if (session.inbox !== undefined) this.options.settlement.forgetInbox(session.consumer, session.inbox);
      return;
    }
    let asks: Envelope[];
    try {
      asks = msg.properties.type === ASK_BATCH_TYPE ? decodeBatch(msg.content, 'ask') : [decodeEnvelope(msg.content)];
      for (const ask of asks) if (ask.type !== 'ask') throw new MalformedEnvelopeError(`an inbox carries asks, not ${ask.type}`);
    } catch (err) {
      // Nothing in it can be trusted to name an asker: those asks time out, as with a lost message.
      log.warn({ err: (err as Error).message, messageId: msg.properties.messageId }, 'dropping an unreadable routed ask');
      metrics?.countDelivery('unreadable-routed');
      return;
    }
    for (const envelope of asks) {
      const shard = shardOf(envelope.to, this.options.shardCount);
      if (!this.mayServe(shard, envelope.to)) {
        this.forward(session, shard, msg, envelope);
        continue;
      }
      ownership.table.begin(shard);
      this.running.add(shard);
      void mailboxes
        .run(envelope.to, async () => {
          const outcome = await runner.run(session.consumer, msg, envelope);
          if (outcome === 'answered') return;
          log.error({ err: outcome.crashed, address: envelope.to, messageId: envelope.id }, 'delivery handler crashed on a routed ask; forwarding it to its shard queue');
          this.forward(session, shard, msg, envelope);
        })
        .finally(() => {
          this.running.remove(shard);
          ownership.table.end(shard);
        });
    }
  }

  /** Resolves once every forward under way has been confirmed or failed. */
  async forwarded(): Promise<void> {
    await Promise.allSettled([...this.forwarding]);
  }

  /**
   * We hold the shard, proven by our own seal marker; no message of it waits in its queue; fewer routed asks of it
   * run than ROUTED_PER_PREFETCH consumer windows (the inbox has no window of its own); and no ask to `address` that
   * we forwarded is still on its way through the queue.
   */
  private mayServe(shard: number, address: string): boolean {
    const { ownership, gate, forwarded, prefetch } = this.options;
    return (
      ownership.holdsForLocalRun(shard) && gate.sealed(shard) && gate.hasCredit(shard) &&
      this.running.get(shard) < prefetch * ROUTED_PER_PREFETCH && !forwarded.waitingFor(address)
    );
  }

  /** Passes a routed ask to its shard queue with the asker's reply-to; the asker learns the holder from the reply. */
  private forward(session: Session, shard: number, msg: ConsumeMessage, envelope: Envelope): void {
    const { ownership, forwarded, runner, metrics } = this.options;
    // Only while we hold the shard can the ask come back to us; otherwise every routed ask of it is forwarded anyway.
    if (ownership.holdsForLocalRun(shard)) forwarded.add(envelope.id, envelope.to, shard, envelope.deadline);
    const forwarding = runner.republish(session, shard, envelope, msg.properties.replyTo).then(
      () => metrics?.forwardedAsks.inc(),
      (err: unknown) => {
        forwarded.done(envelope.id);
        runner.reply(session.consumer, msg, envelope, errorReply(asTroupeError(err)));
      },
    );
    this.forwarding.add(forwarding);
    void forwarding.finally(() => this.forwarding.delete(forwarding));
  }
}
