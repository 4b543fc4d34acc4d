import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { AckBatcher, type Settlement } from './ack-batcher.js';
import { REPLY_BATCH_TYPE, TurnOutbox, encodeBatch, type Outgoing } from './ask-batch.js';
import { INBOX_HEADER } from './wire.js';

/**
 * How deliveries leave a consumer channel: their acks (ack-batcher.ts) and the replies to the asks among them
 * (one turn's replies per asker, ask-batch.ts), replies first. Everything is per channel, so a channel that is
 * gone takes its batchers with it.
 */
export class ChannelSettlement {
  /** One batcher per consumer channel: every delivery on it is registered there, so acks can go out as `multiple`. */
  private readonly ackBatchers = new WeakMap<Channel, AckBatcher>();
  private readonly replyOutboxes = new WeakMap<Channel, TurnOutbox<string>>();
  /** The inbox a consumer channel's replies name: this node holds the shards of the asks it answers there. */
  private readonly replyInboxes = new WeakMap<Channel, string>();

  constructor(private readonly log: Logger) {}

  /** Call for every delivery on the channel, in the order they arrive, before it can be settled. */
  received(channel: Channel, msg: ConsumeMessage): void {
    this.acksOf(channel).received(msg);
  }

  /** Acks after the connection died are meaningless (the broker redelivers); the batcher swallows amqplib's throw. */
  settle(channel: Channel, msg: ConsumeMessage, how: Settlement): void {
    this.acksOf(channel).settle(msg, how);
  }

  /** Sends the channel's pending replies and acks now (before a consumer is cancelled, before closing). */
  flush(channel: Channel): void {
    this.acksOf(channel).flush();
  }

  /** Queues a reply for this turn's message to `replyTo`; it leaves before the channel's next acks. */
  reply(channel: Channel, replyTo: string, reply: Outgoing): void {
    this.repliesOf(channel).add(replyTo, reply);
  }

  /** Replies on `channel` name `inbox` from now on (owner-routes.ts). */
  nameInbox(channel: Channel, inbox: string): void {
    this.replyInboxes.set(channel, inbox);
  }

  /** Replies on `channel` stop naming an inbox; with `only`, only if that is the one they name. */
  forgetInbox(channel: Channel, only?: string): void {
    if (only === undefined || this.replyInboxes.get(channel) === only) this.replyInboxes.delete(channel);
  }

  /** One turn's replies per asker on this channel, flushed before the channel's acks (reply first, then ack). */
  private repliesOf(channel: Channel): TurnOutbox<string> {
    let outbox = this.replyOutboxes.get(channel);
    if (!outbox) {
      outbox = new TurnOutbox<string>((replyTo, replies) => {
        const single = replies.length === 1 ? replies[0]! : undefined;
        try {
          const inbox = this.replyInboxes.get(channel);
          const headers = inbox === undefined ? undefined : { [INBOX_HEADER]: inbox };
          if (single) channel.publish('', replyTo, single.body, { correlationId: single.id, contentType: 'application/json', type: 'reply', headers });
          else channel.publish('', replyTo, encodeBatch(replies.map((r) => r.body)), { contentType: 'application/json', type: REPLY_BATCH_TYPE, headers });
        } catch (err) {
          this.log.warn({ err: (err as Error).message, replies: replies.length }, 'replies lost with their channel; the askers will time out');
        }
      });
      this.replyOutboxes.set(channel, outbox);
    }
    return outbox;
  }

  private acksOf(channel: Channel): AckBatcher {
    let batcher = this.ackBatchers.get(channel);
    if (!batcher) this.ackBatchers.set(channel, (batcher = new AckBatcher(channel, () => this.replyOutboxes.get(channel)?.flush())));
    return batcher;
  }
}
