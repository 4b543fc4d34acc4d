import type { Logger } from '../ops/kernel/logger.js';
import { silentLogger } from '../ops/kernel/logger.js';
import { TroupeError, asTroupeError, fromWire } from '../ops/kernel/errors.js';
import type { DeliveryHandler, EventHandler, Transport, Unsubscribe, AskOptions } from './port.js';
import { KeyedSerial } from './keyed-serial.js';
import { assertPattern, assertTopic, topicMatcher, type TopicMatcher } from './topic-pattern.js';
import { assertAddress, copyAcrossWire, wireText, createEnvelope, errorReply, inTraceOf, okReply, type Envelope, type Reply } from './envelope.js';
import { DEFAULT_TELL_TTL_MS, EVENT_TTL_MS, askDeadline, assertTimeout } from './deadlines.js';
import { DEFAULT_LOCAL_DEAD_LETTER_BOUND, LocalDeadLetters } from './local-dead-letters.js';

export interface LocalTransportOptions {
  /** @default 'local' */
  nodeId?: string;
  log?: Logger;
  /** How long a told message stays deliverable. @default DEFAULT_TELL_TTL_MS */
  tellTtlMs?: number;
  /** Handler crashes of a tell retried before it is dead-lettered, as the broker's shard queues do: 4 means 5 runs. @default 4 */
  deliveryLimit?: number;
  /** Dead letters kept in memory. @default 1000 */
  deadLetterBound?: number;
}

interface Subscription {
  readonly pattern: string;
  readonly matches: TopicMatcher;
  readonly handler: EventHandler;
}

/**
 * The in-process transport of a single node on embedded defaults. It keeps the wire's semantics so code that
 * works here works over RabbitMQ: every message, reply and event is copied as the wire copies it (copyAcrossWire: no
 * shared object references, the same size limit, errors rebuilt from their wire form), deliveries to one address
 * run in arrival order, deadlines are enforced on both sides, events are dispatched asynchronously, and a tell
 * whose handler crashes is run again up to the delivery limit, then dead-lettered (local-dead-letters.ts). A crashing
 * ask answers INTERNAL at once, as the AMQP transport's in-process asks do: its asker hears of it, nothing is lost.
 */
export class LocalTransport implements Transport {
  readonly kind = 'local' as const;
  private readonly nodeId: string;
  private readonly log: Logger;
  private readonly tellTtlMs: number;
  private readonly deliveryLimit: number;
  readonly deadLetters: LocalDeadLetters;
  private readonly mailboxes = new KeyedSerial();
  private readonly subscriptions = new Set<Subscription>();
  private handler: DeliveryHandler | undefined;
  private closed = false;

  constructor(options: LocalTransportOptions = {}) {
    this.nodeId = options.nodeId ?? 'local';
    this.log = options.log ?? silentLogger();
    this.tellTtlMs = options.tellTtlMs ?? DEFAULT_TELL_TTL_MS;
    this.deliveryLimit = options.deliveryLimit ?? 4;
    this.deadLetters = new LocalDeadLetters(options.deadLetterBound ?? DEFAULT_LOCAL_DEAD_LETTER_BOUND, (address, message) => this.tell(address, message), this.log);
  }

  async start(handler: DeliveryHandler): Promise<void> {
    if (this.closed) throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is closed');
    if (this.handler) throw new TroupeError('INTERNAL', 'transport already started');
    this.handler = handler;
  }

  ready(): boolean {
    return this.handler !== undefined && !this.closed;
  }

  async ask<R = unknown>(address: string, message: unknown, options: AskOptions): Promise<R> {
    const handler = this.deliverable();
    assertAddress(address);
    assertTimeout(options.timeoutMs);
    const envelope = createEnvelope({ type: 'ask', to: address, from: this.nodeId, deadline: Date.now() + options.timeoutMs, payload: copyAcrossWire(message) });
    return new Promise<R>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new TroupeError('TRANSPORT_TIMEOUT', undefined, { address, timeoutMs: options.timeoutMs })),
        options.timeoutMs,
      );
      this.deliver(handler, envelope).then(
        (reply) => {
          clearTimeout(timer);
          if (reply === undefined) return; // dropped after its deadline; the timer has already rejected
          if (reply.ok) resolve(reply.value as R);
          else reject(fromWire(reply.error));
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(asTroupeError(err));
        },
      );
    });
  }

  async tell(address: string, message: unknown): Promise<void> {
    const handler = this.deliverable();
    assertAddress(address);
    const envelope = createEnvelope({ type: 'tell', to: address, from: this.nodeId, deadline: Date.now() + this.tellTtlMs, payload: copyAcrossWire(message) });
    this.deliver(handler, envelope).then(
      (reply) => {
        if (reply && !reply.ok) this.log.debug({ address, code: reply.error.code }, 'told message was refused by its handler');
      },
      (err: unknown) => this.log.error({ err, address }, 'told message could not be delivered'),
    );
  }

  async publish(topic: string, event: unknown): Promise<void> {
    this.deliverable();
    assertTopic(topic);
    // Checked and serialised once, whether or not anyone listens (the wire would refuse it all the same); each
    // subscriber gets its own copy.
    const text = wireText(event);
    for (const subscription of this.subscriptions) {
      if (!subscription.matches(topic)) continue;
      // setImmediate keeps publish order per subscriber and never runs a handler inside the publisher's call stack.
      setImmediate(() => {
        if (!this.subscriptions.has(subscription)) return;
        try {
          subscription.handler(topic, JSON.parse(text));
        } catch (err) {
          this.log.error({ err, topic, pattern: subscription.pattern }, 'event handler threw');
        }
      });
    }
  }

  /** In-process delivery loses no event: nothing to hear. */
  onEventsLost(): () => void {
    return () => undefined;
  }

  async subscribe(pattern: string, handler: EventHandler): Promise<Unsubscribe> {
    if (this.closed) throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is closed');
    assertPattern(pattern);
    const subscription: Subscription = { pattern, matches: topicMatcher(pattern), handler };
    this.subscriptions.add(subscription);
    return async () => {
      this.subscriptions.delete(subscription);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.mailboxes.idle();
    this.subscriptions.clear();
  }

  private deliverable(): DeliveryHandler {
    if (this.closed) throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is closed');
    if (!this.handler) throw new TroupeError('TRANSPORT_UNAVAILABLE', 'transport is not started');
    return this.handler;
  }

  /**
   * A value or a TroupeError is the answer. Anything else thrown is a crash: an ask answers it; a tell, which nobody
   * waits for, runs again as the broker would redeliver it, and after the last allowed run is dead-lettered.
   */
  private async runToAnswer(handler: DeliveryHandler, envelope: Envelope): Promise<Reply> {
    for (let returns = 0; ; returns += 1) {
      try {
        return okReply(await inTraceOf(envelope, () => handler(envelope.to, envelope.payload, askDeadline(envelope))));
      } catch (err) {
        if (err instanceof TroupeError) return errorReply(err);
        const final = envelope.type === 'ask' || returns >= this.deliveryLimit;
        this.log.error(
          { err, address: envelope.to, messageId: envelope.id, redeliveries: returns },
          envelope.type === 'ask' ? 'delivery handler crashed'
            : final ? 'delivery handler crashed on the last attempt; the message is dead-lettered' : 'delivery handler crashed; the message will be redelivered',
        );
        if (final) {
          if (envelope.type === 'tell') this.deadLetters.add(envelope, 'delivery_limit');
          return errorReply(asTroupeError(err));
        }
      }
    }
  }

  /** Runs the handler in the address's turn; undefined when the deadline passed while the message waited. */
  private deliver(handler: DeliveryHandler, envelope: Envelope): Promise<Reply | undefined> {
    return this.mailboxes.run(envelope.to, async () => {
      if (Date.now() > envelope.deadline) return undefined;
      const reply = await this.runToAnswer(handler, envelope);
      try {
        return copyAcrossWire(reply);
      } catch (err) {
        this.log.error({ err, address: envelope.to }, 'reply could not be encoded');
        return errorReply(asTroupeError(err));
      }
    });
  }
}
