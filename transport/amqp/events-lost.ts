import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import type { LostEventListener } from '../port.js';
import type { TopologyNames } from './topology.js';
import type { ChannelSettlement } from './settlement.js';
import type { TransportMetrics } from './metrics.js';

/** Lost events are logged at most this often, with the count since the last line (a flood must not flood the log). */
const LOG_EVERY_MS = 10_000;

/**
 * Events this node was sent and lost: its event queue keeps at most `eventBacklog` messages and drops from the head
 * past that (a node too slow must not grow the broker's memory), and each dropped message is dead-lettered here
 * with its topic. Each one counts in `troupe_transport_events_lost_total` and is reported to the listeners (the
 * node's streams), which tell the SSE clients of that topic to reload: a loss is never silent (issue 20).
 */
export class LostEvents {
  private readonly listeners = new Set<LostEventListener>();
  private unlogged = 0;
  private loggedAt = 0;

  constructor(
    private readonly names: TopologyNames,
    private readonly settlement: ChannelSettlement,
    private readonly log: Logger,
    private readonly metrics: TransportMetrics | undefined,
  ) {}

  listen(listener: LostEventListener): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  async consume(consumer: Channel): Promise<string> {
    const { consumerTag } = await consumer.consume(this.names.lostEventQueue, (msg) => this.onLost(consumer, msg), { noAck: false });
    return consumerTag;
  }

  private onLost(channel: Channel, msg: ConsumeMessage | null): void {
    if (msg === null) return;
    this.settlement.received(channel, msg);
    const topic = topicOf(msg);
    this.metrics?.eventsLost.inc();
    this.unlogged += 1;
    if (Date.now() - this.loggedAt >= LOG_EVERY_MS) {
      this.log.warn({ lost: this.unlogged, topic }, "events dropped from this node's full event queue; their streams are told to reload");
      this.unlogged = 0;
      this.loggedAt = Date.now();
    }
    if (topic !== undefined) {
      for (const listener of this.listeners) {
        try {
          listener(topic);
        } catch (err) {
          this.log.error({ err, topic }, 'lost-event listener threw');
        }
      }
    }
    this.settlement.settle(channel, msg, 'ack');
  }
}

/** The topic the event was published on: the first routing key of its first death (the dead-letter key replaced it). */
function topicOf(msg: ConsumeMessage): string | undefined {
  const deaths = msg.properties.headers?.['x-death'] as Array<{ 'routing-keys'?: unknown[] }> | undefined;
  const key = deaths?.[0]?.['routing-keys']?.[0];
  return typeof key === 'string' ? key : key instanceof Buffer ? key.toString() : undefined;
}
