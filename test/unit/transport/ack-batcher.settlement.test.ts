/**
 * Invariant: the ack batcher never acknowledges a delivery that was not settled by us — a `multiple` ack only covers
 * a prefix of deliveries each acked or nacked here — while a run of acks made in one event-loop turn reaches the
 * broker as one frame, acks behind a still-running delivery are not held back, and nacks go out at once after the
 * acks decided before them. (Pure bookkeeping: the channel is a recorder.)
 */
import { expect } from 'chai';
import type { Channel, ConsumeMessage } from 'amqplib';
import { AckBatcher } from '../../../transport/amqp/ack-batcher.js';

type Frame = { kind: 'ack' | 'nack'; tag: number; multiple: boolean; requeue?: boolean };

function recordingChannel(): { channel: Channel; frames: Frame[] } {
  const frames: Frame[] = [];
  const channel = {
    ack: (msg: ConsumeMessage, multiple = false) => frames.push({ kind: 'ack', tag: msg.fields.deliveryTag, multiple }),
    nack: (msg: ConsumeMessage, multiple = false, requeue = true) => frames.push({ kind: 'nack', tag: msg.fields.deliveryTag, multiple, requeue }),
  } as unknown as Channel;
  return { channel, frames };
}

const delivery = (tag: number) => ({ fields: { deliveryTag: tag }, properties: {}, content: Buffer.alloc(0) }) as unknown as ConsumeMessage;
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Tags the broker would consider settled after these frames (multiple acks cover every lower tag still unsettled). */
function settledByBroker(frames: Frame[], delivered: number[]): Set<number> {
  const settled = new Set<number>();
  for (const f of frames) {
    if (f.multiple) for (const t of delivered) if (t <= f.tag) settled.add(t);
    settled.add(f.tag);
  }
  return settled;
}

describe('AckBatcher', () => {
  it('sends one multiple-ack for a run of acks made in one turn', async () => {
    const { channel, frames } = recordingChannel();
    const acks = new AckBatcher(channel);
    const msgs = [1, 2, 3, 4].map(delivery);
    for (const m of msgs) acks.received(m);
    for (const m of msgs) acks.settle(m, 'ack');
    expect(frames).to.deep.equal([]);
    await nextTurn();
    expect(frames).to.deep.equal([{ kind: 'ack', tag: 4, multiple: true }]);
  });

  it('never covers a delivery still being handled, and does not hold back the acks behind it', async () => {
    const { channel, frames } = recordingChannel();
    const acks = new AckBatcher(channel);
    const tags = [1, 2, 3, 4, 5];
    for (const t of tags) acks.received(delivery(t));
    for (const t of [1, 2, 4, 5]) acks.settle(delivery(t), 'ack');
    await nextTurn();
    expect(settledByBroker(frames, tags).has(3)).to.equal(false);
    expect([...settledByBroker(frames, tags)].sort()).to.deep.equal([1, 2, 4, 5]);
    // 3 finishes later: the prefix now runs through 5, whose acks were already sent one by one.
    acks.settle(delivery(3), 'ack');
    await nextTurn();
    expect(frames.at(-1)).to.deep.equal({ kind: 'ack', tag: 3, multiple: true });
    acks.received(delivery(6));
    acks.settle(delivery(6), 'ack');
    await nextTurn();
    expect(frames.at(-1)).to.deep.equal({ kind: 'ack', tag: 6, multiple: true });
  });

  it('sends a nack at once, after the acks decided before it, and skips it when the prefix advances', async () => {
    const { channel, frames } = recordingChannel();
    const acks = new AckBatcher(channel);
    for (const t of [1, 2, 3]) acks.received(delivery(t));
    acks.settle(delivery(1), 'ack');
    acks.settle(delivery(2), 'dead-letter');
    expect(frames).to.deep.equal([
      { kind: 'ack', tag: 1, multiple: true },
      { kind: 'nack', tag: 2, multiple: false, requeue: false },
    ]);
    acks.settle(delivery(3), 'ack');
    await nextTurn();
    expect(frames.at(-1)).to.deep.equal({ kind: 'ack', tag: 3, multiple: true });
  });

  it('flushes on demand (before a cancel or a close) and tolerates a closed channel', () => {
    const { channel, frames } = recordingChannel();
    const acks = new AckBatcher(channel);
    acks.received(delivery(1));
    acks.settle(delivery(1), 'ack');
    acks.flush();
    expect(frames).to.deep.equal([{ kind: 'ack', tag: 1, multiple: true }]);
    const closed = new AckBatcher({ ack: () => { throw new Error('channel closed'); }, nack: () => { throw new Error('channel closed'); } } as unknown as Channel);
    closed.received(delivery(1));
    closed.received(delivery(2));
    closed.settle(delivery(1), 'ack');
    expect(() => closed.flush()).not.to.throw();
    expect(() => closed.settle(delivery(2), 'requeue')).not.to.throw();
  });
});
