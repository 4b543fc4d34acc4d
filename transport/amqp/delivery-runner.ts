import type { Channel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError, asTroupeError } from '../../ops/kernel/errors.js';
import type { DeliveryHandler } from '../port.js';
import { askDeadline } from '../deadlines.js';
import { createEnvelope, encodeEnvelope, errorReply, inTraceOf, okReply, type Envelope, type Reply } from '../envelope.js';
import type { TopologyNames } from './topology.js';
import type { BrokerConnection, Session } from './connection.js';
import type { TransportMetrics } from './metrics.js';
import type { ChannelSettlement } from './settlement.js';
import { DIRECT_REPLY_TO } from './wire.js';

/** What running one delivery came to: answered (or dropped as expired), or a crash for the caller's redelivery rule. */
export type Outcome = 'answered' | { crashed: unknown };

/**
 * Runs one ask or tell that came through the broker (a shard queue or this node's inbox) through the delivery
 * handler and answers its asker. Shard deliveries and routed asks differ only in what they do with a crash.
 */
export class DeliveryRunner {
  constructor(
    private readonly handler: DeliveryHandler,
    private readonly link: BrokerConnection,
    private readonly names: TopologyNames,
    private readonly nodeId: string,
    private readonly settlement: ChannelSettlement,
    private readonly log: Logger,
    private readonly metrics: TransportMetrics | undefined,
  ) {}

  /**
   * Runs one ask or tell in its turn: an expired one is dropped, a value or a TroupeError is the answer (sent to an
   * asker). Anything else thrown is a crash, handed back for the caller's redelivery rule.
   */
  async run(channel: Channel, msg: ConsumeMessage, envelope: Envelope): Promise<Outcome> {
    if (Date.now() > envelope.deadline) {
      this.metrics?.countDelivery('expired');
      return 'answered';
    }
    let reply: Reply;
    try {
      reply = okReply(await inTraceOf(envelope, () => this.handler(envelope.to, envelope.payload, askDeadline(envelope))));
    } catch (err) {
      if (!(err instanceof TroupeError)) {
        this.metrics?.countDelivery('crashed');
        return { crashed: err };
      }
      reply = errorReply(err);
    }
    if (envelope.type === 'ask') this.reply(channel, msg, envelope, reply);
    this.metrics?.countDelivery(reply.ok ? 'ok' : 'rejected');
    return 'answered';
  }

  reply(channel: Channel, msg: ConsumeMessage, ask: Envelope, reply: Reply): void {
    const replyTo = msg.properties.replyTo;
    if (typeof replyTo !== 'string' || !replyTo.startsWith(`${DIRECT_REPLY_TO}.`)) {
      this.log.warn({ address: ask.to, messageId: ask.id }, 'ask without a direct reply-to address; no reply sent');
      return;
    }
    const envelopeFor = (payload: Reply) =>
      encodeEnvelope(createEnvelope({ type: 'reply', to: ask.from, from: this.nodeId, deadline: ask.deadline, correlationId: ask.id, payload }));
    let body: Buffer;
    try {
      body = envelopeFor(reply);
    } catch (err) {
      this.log.error({ err, address: ask.to }, 'reply could not be encoded');
      body = envelopeFor(errorReply(asTroupeError(err)));
    }
    this.settlement.reply(channel, replyTo, { id: ask.id, body });
  }

  /** One ask alone on its shard queue, confirmed, answering to the asker's reply-to: a crash retry or a forward. */
  republish(session: Session, shard: number, envelope: Envelope, replyTo: unknown): Promise<void> {
    return this.link.publishConfirmed(session, this.names.shardExchange, String(shard), encodeEnvelope(envelope), {
      persistent: true, messageId: envelope.id, type: 'ask', replyTo: replyTo as string, correlationId: envelope.id,
    });
  }
}
