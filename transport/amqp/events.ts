import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { EventHandler, Unsubscribe } from '../port.js';
import { KeyedSerial } from '../keyed-serial.js';
import { assertPattern, assertTopic, topicMatcher, type TopicMatcher } from '../topic-pattern.js';
import { EVENT_TTL_MS } from '../deadlines.js';
import { MalformedEnvelopeError, createEnvelope, decodeEnvelope, encodeEnvelope } from '../envelope.js';
import type { TopologyNames } from './topology.js';
import type { BrokerConnection } from './connection.js';
import type { ChannelSettlement } from './settlement.js';

/**
 * Events: published to the topic exchange, received on this node's own event queue, which is bound once per pattern
 * someone here subscribed to. The bindings follow the subscriptions (`syncBinding`) and are made again on every
 * new connection (`bindAll`, then `resync` for what changed while it was being set up).
 */
export class EventBus {
  /**
   * Wanted event patterns → this node's handlers, with the pattern split once (`topicMatcher`). The broker binding
   * follows this map (`syncBinding`).
   */
  private readonly subscriptions = new Map<string, { readonly matches: TopicMatcher; readonly handlers: Set<EventHandler> }>();
  private readonly bound = new Set<string>();
  private readonly bindingTurns = new KeyedSerial();

  constructor(
    private readonly link: BrokerConnection,
    private readonly names: TopologyNames,
    private readonly nodeId: string,
    private readonly settlement: ChannelSettlement,
    private readonly log: Logger,
  ) {}

  async publish(topic: string, event: unknown): Promise<void> {
    const session = this.link.liveSession();
    assertTopic(topic);
    const envelope = createEnvelope({ type: 'event', to: topic, from: this.nodeId, deadline: Date.now() + EVENT_TTL_MS, payload: event });
    await this.link.publishConfirmed(session, this.names.eventExchange, topic, encodeEnvelope(envelope), { persistent: false, messageId: envelope.id, type: 'event' });
  }

  async subscribe(pattern: string, handler: EventHandler): Promise<Unsubscribe> {
    if (this.link.state === 'closed' || this.link.state === 'draining') throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is closed');
    assertPattern(pattern);
    let subscription = this.subscriptions.get(pattern);
    if (!subscription) this.subscriptions.set(pattern, (subscription = { matches: topicMatcher(pattern), handlers: new Set() }));
    // A distinct wrapper per call, so subscribing the same function twice needs two unsubscribes.
    const entry: EventHandler = (topic, event) => handler(topic, event);
    subscription.handlers.add(entry);
    await this.syncBinding(pattern);
    return async () => {
      const current = this.subscriptions.get(pattern);
      if (!current?.handlers.delete(entry)) return;
      if (current.handlers.size === 0) this.subscriptions.delete(pattern);
      await this.syncBinding(pattern);
    };
  }

  /** A new connection: binds every wanted pattern on its consumer channel (the event queue may be new). */
  async bindAll(channels: readonly Channel[]): Promise<void> {
    const wanted = [...this.subscriptions.keys()];
    this.bound.clear();
    // Spread over the channels given: one channel's bindings are a round trip each (declare-in-parallel.ts).
    await Promise.all(wanted.map((pattern, i) => channels[i % channels.length]!.bindQueue(this.names.eventQueue, this.names.eventExchange, pattern)));
    for (const pattern of wanted) this.bound.add(pattern);
  }

  /** Starts consuming the event queue on `consumer`; answers the consumer tag. */
  async consume(consumer: Channel): Promise<string> {
    const events = await consumer.consume(this.names.eventQueue, (msg) => this.onEvent(consumer, msg), { noAck: false });
    return events.consumerTag;
  }

  /** Patterns subscribed or dropped while a connection was set up are reconciled once its session is visible. */
  resync(): void {
    for (const pattern of new Set([...this.subscriptions.keys(), ...this.bound])) void this.syncBinding(pattern);
  }

  /** Makes the broker binding for `pattern` match whether anyone here still wants it; one turn per pattern at a time. */
  private syncBinding(pattern: string): Promise<void> {
    return this.bindingTurns.run(pattern, async () => {
      const session = this.link.session;
      if (!session) return; // setup binds every wanted pattern when the connection comes back
      const wanted = this.subscriptions.has(pattern);
      if (wanted === this.bound.has(pattern)) return;
      try {
        if (wanted) {
          await session.consumer.bindQueue(this.names.eventQueue, this.names.eventExchange, pattern);
          this.bound.add(pattern);
        } else {
          this.bound.delete(pattern);
          await session.consumer.unbindQueue(this.names.eventQueue, this.names.eventExchange, pattern);
        }
      } catch (err) {
        this.log.warn({ err: (err as Error).message, pattern }, 'event binding change failed; it is redone on reconnect');
      }
    });
  }

  private onEvent(channel: Channel, msg: ConsumeMessage | null): void {
    if (msg === null) return;
    this.settlement.received(channel, msg);
    try {
      const envelope = decodeEnvelope(msg.content);
      if (envelope.type !== 'event') throw new MalformedEnvelopeError(`expected an event, got ${envelope.type}`);
      if (Date.now() <= envelope.deadline) this.dispatch(envelope.to, envelope.payload);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'dropping unreadable event');
    }
    this.settlement.settle(channel, msg, 'ack');
  }

  private dispatch(topic: string, event: unknown): void {
    for (const [pattern, { matches, handlers }] of this.subscriptions) {
      if (!matches(topic)) continue;
      for (const handler of handlers) {
        try {
          handler(topic, event);
        } catch (err) {
          this.log.error({ err, topic, pattern }, 'event handler threw');
        }
      }
    }
  }
}
