import type { Channel, ConsumeMessage, Message } from 'amqplib';
import { ChurnSet } from '../../ops/kernel/churn-map.js';

export type Settlement = 'ack' | 'requeue' | 'dead-letter';

/**
 * Settles the deliveries of one consumer channel. An ack on a quorum queue is a Raft command in the broker, so one
 * `basic.ack multiple` for a run of deliveries costs it far less than one ack each (ops/bench/cluster.ts, G4).
 *
 * Every delivery on the channel is registered in arrival order (delivery tags grow by one per delivery). `ack`
 * only marks the delivery; at the end of the current turn of the event loop the longest settled prefix of the
 * outstanding tags goes out as one `ack(multiple)`, and acks behind a delivery still being handled go out one by
 * one, so a slow handler never holds another delivery's ack back. `multiple` acknowledges every unsettled tag up
 * to the one named, so it is only ever sent for a prefix in which every delivery was acked or nacked by us: a
 * delivery still being handled is never acknowledged by a neighbour's ack. Nacks (requeue, dead-letter) go out at
 * once, after any acks already made, so the broker sees settlements in the order they were decided.
 */
export class AckBatcher {
  /** Delivery tags in arrival order from `head` on; those before `head` are settled and sent. */
  private readonly outstanding: number[] = [];
  private head = 0;
  /** Acked here, not yet sent to the broker. */
  private readonly toAck = new ChurnSet<number>();
  /** Settled on the broker already (nacked, or acked one by one); skipped when the prefix advances. */
  private readonly sent = new ChurnSet<number>();
  private scheduled = false;

  /** `beforeFlush` sends whatever must reach the broker before these acks (the replies of the acked asks). */
  constructor(private readonly channel: Channel, private readonly beforeFlush: () => void = () => {}) {}

  /** Call for every delivery on the channel, in the order they arrive, before it can be settled. */
  received(msg: ConsumeMessage): void {
    this.outstanding.push(msg.fields.deliveryTag);
  }

  settle(msg: ConsumeMessage, how: Settlement): void {
    const tag = msg.fields.deliveryTag;
    if (how === 'ack') {
      this.toAck.add(tag);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
      return;
    }
    this.flush();
    this.sent.add(tag);
    try {
      this.channel.nack(msg, false, how === 'requeue');
    } catch {
      // channel already closed: the broker returns the message to the queue for the next consumer
    }
  }

  /** Sends every ack made so far; also called before a consumer is cancelled and before the connection closes. */
  flush(): void {
    this.scheduled = false;
    this.beforeFlush();
    if (this.toAck.size === 0) return;
    let upTo: number | undefined;
    while (this.head < this.outstanding.length) {
      const tag = this.outstanding[this.head]!;
      if (this.toAck.delete(tag)) upTo = tag;
      else if (!this.sent.delete(tag)) break;
      this.head += 1;
    }
    if (this.head > 1024 && this.head * 2 > this.outstanding.length) {
      this.outstanding.splice(0, this.head);
      this.head = 0;
    }
    try {
      if (upTo !== undefined) this.channel.ack(tagged(upTo), true);
      for (const tag of this.toAck) {
        this.channel.ack(tagged(tag), false);
        this.sent.add(tag);
      }
    } catch {
      // channel already closed: the broker redelivers what it did not hear about; handlers are idempotent
    }
    this.toAck.clear();
  }
}

/** amqplib's ack reads only the delivery tag. */
function tagged(deliveryTag: number): Message {
  // A whole Message (content, every property) per ack would be built for amqplib to read one number of it.
  return { fields: { deliveryTag } } as unknown as Message;
}
