import type { ConsumeMessage, Message } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError, fromWire } from '../../ops/kernel/errors.js';
import { ChurnMap } from '../../ops/kernel/churn-map.js';
import type { AskOptions } from '../port.js';
import { shardOf } from '../shards.js';
import { assertTimeout } from '../deadlines.js';
import {
  EnvelopeVersionError, MalformedEnvelopeError, assertAddress, createEnvelope, decodeEnvelope, encodeEnvelope, newMessageId, readReply,
  type Envelope, type Reply,
} from '../envelope.js';
import type { TopologyNames } from './topology.js';
import type { BrokerConnection } from './connection.js';
import type { TransportMetrics } from './metrics.js';
import type { ShardOwnership } from './shard-ownership.js';
import type { InProcessAsks } from './in-process.js';
import type { TellTurns } from './teller.js';
import { ASK_BATCH_TYPE, REPLY_BATCH_TYPE, TurnOutbox, decodeBatch, encodeBatch, type Outgoing } from './ask-batch.js';
import { OwnerRoutes, QUEUE_ROUTE, type Replier } from './owner-routes.js';
import { DIRECT_REPLY_TO, INBOX_HEADER } from './wire.js';

/** What follows `<prefix>.inbox.<nodeId>.` in an inbox name: the connection's random suffix. */
const INBOX_SUFFIX = /^[0-9a-f]{1,16}$/;

interface PendingAsk {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: TroupeError) => void;
  readonly timer: NodeJS.Timeout;
  readonly startedAt: number;
  readonly address: string;
  readonly shard: number;
  /** The encoded ask, kept to send it again through the queue if the inbox it went to goes away. */
  readonly body: Buffer;
  /** QUEUE_ROUTE, or the holder's inbox it was sent to. */
  route: string;
  /** For an ask through the queue: the tells to its shard sent before it (OwnerRoutes.tellMark). */
  tellMark: number | undefined;
}

export interface AskerOptions {
  readonly nodeId: string;
  readonly shardCount: number;
  readonly prefix: string;
  readonly ownerRouting: boolean;
  readonly names: TopologyNames;
  readonly link: BrokerConnection;
  readonly ownership: ShardOwnership;
  readonly routes: OwnerRoutes;
  readonly inProcess: InProcessAsks;
  readonly tellTurns: TellTurns;
  readonly log: Logger;
  readonly metrics: TransportMetrics | undefined;
}

/**
 * Asks this node makes. An ask goes to its shard's quorum queue through a direct exchange (routing key = shard
 * number) on the confirm channel, pipelined, with direct reply-to for the answer and a per-ask deadline timer; or
 * straight to the inbox of the node a reply named as the shard's holder (owner-routes.ts); or, for a shard this
 * node holds, in-process (in-process.ts). Asks made in one turn for one shard leave as one `ask-batch` message, and
 * a reply may come alone or in a `reply-batch` (ask-batch.ts). While disconnected, asks fail at once with
 * TRANSPORT_UNAVAILABLE and pending asks are rejected: their replies could never arrive on a new channel.
 */
export class Asker {
  private readonly pending = new ChurnMap<string, PendingAsk>();
  private readonly outbox = new TurnOutbox<number>((shard, asks) => this.sendAsks(shard, asks));
  /** One turn's owner-routed asks per holder inbox. */
  private readonly inboxOutbox = new TurnOutbox<string>((inbox, asks) => this.sendToInbox(inbox, asks));

  constructor(private readonly options: AskerOptions) {}

  async ask<R = unknown>(address: string, message: unknown, options: AskOptions): Promise<R> {
    const { link, nodeId, shardCount, ownerRouting, routes, ownership, inProcess, tellTurns } = this.options;
    link.liveSession();
    assertAddress(address);
    assertTimeout(options.timeoutMs);
    // A tell to this address made before this ask is waiting for routed asks to settle: this ask goes after it,
    // and the wait counts against its own timeout.
    let timeoutMs = options.timeoutMs;
    const tellTurn = tellTurns.of(address);
    if (tellTurn !== undefined) {
      const waitFrom = performance.now();
      if (!(await settlesWithin(tellTurn, timeoutMs))) throw new TroupeError('TRANSPORT_TIMEOUT', undefined, { address, timeoutMs });
      link.liveSession();
      timeoutMs = Math.max(1, Math.round(timeoutMs - (performance.now() - waitFrom)));
    }
    const shard = shardOf(address, shardCount);
    // In-process, the message is copied as the wire would copy it, without becoming bytes (in-process.ts).
    if (inProcess.may(shard, address)) return inProcess.ask<R>(shard, address, message, timeoutMs);
    const envelope = createEnvelope({ type: 'ask', to: address, from: nodeId, deadline: Date.now() + timeoutMs, payload: message });
    const body = encodeEnvelope(envelope);
    return new Promise<R>((resolve, reject) => {
      const timer = setTimeout(
        () => this.settle(envelope.id, { error: new TroupeError('TRANSPORT_TIMEOUT', undefined, { address, timeoutMs: options.timeoutMs }) }),
        timeoutMs,
      );
      const route = ownerRouting ? routes.route(shard, address, ownership.table.heldHere(shard)) : QUEUE_ROUTE;
      const direct = route !== QUEUE_ROUTE;
      routes.sent(address, route);
      this.pending.set(envelope.id, {
        resolve: resolve as (value: unknown) => void, reject, timer, startedAt: performance.now(), address, shard, body, route,
        tellMark: direct ? undefined : routes.tellMark(shard),
      });
      if (direct) this.inboxOutbox.add(route, { id: envelope.id, body });
      else this.outbox.add(shard, { id: envelope.id, body });
    });
  }

  /** Sends this turn's asks to `shard` now (a tell to it is about to go). */
  flushShard(shard: number): void {
    this.outbox.flushKey(shard);
  }

  /** A routed ask came back unroutable: that inbox is gone. */
  onReturned(msg: Message): void {
    if (msg.fields.exchange === '') this.inboxGone(msg.fields.routingKey);
  }

  /**
   * An inbox is gone (its node's connection went, and with it what the inbox held): what we knew of its holder is
   * forgotten and the asks sent to it go again through their shard queues. The cluster calls this when a member's
   * heartbeat names a new inbox.
   */
  inboxGone(inbox: string): void {
    const gone = this.options.routes.forget((holder) => holder.inbox === inbox).add(inbox);
    this.rerouteAsks((ask) => gone.has(ask.route));
  }

  /**
   * A node died: the cluster heard nothing from it for its presence expiry (decision 0010). What it was holding and
   * the asks waiting on its inbox are lost with it, so those asks go again through their shard queues, where the new
   * holders answer them (an ask may so run twice, as a queue redelivery after a crash can; handlers are idempotent,
   * DESIGN rule 6). A node that leaves in good order is not reported: it forwards what reaches it until its inbox is
   * deleted, and after that asks to its inbox come back as unroutable.
   */
  holderGone(nodeId: string): void {
    // Every inbox of the node, including one an address is still pinned to after its shard moved on.
    const gone = this.options.routes.forget((holder) => holder.nodeId === nodeId);
    this.rerouteAsks((ask) => gone.has(ask.route));
  }

  /** Fails every pending ask: its reply can never arrive. */
  failPending(reason: string): void {
    for (const id of [...this.pending.keys()]) this.settle(id, { error: new TroupeError('TRANSPORT_UNAVAILABLE', reason) });
  }

  onReply(msg: ConsumeMessage | null): void {
    if (msg === null) return; // the reply consumer ends with its channel; the connection's `lost` fails the asks
    if (msg.properties.type === REPLY_BATCH_TYPE) return this.onReplyBatch(msg);
    const correlationId = typeof msg.properties.correlationId === 'string' ? msg.properties.correlationId : undefined;
    let envelope: Envelope;
    try {
      envelope = decodeEnvelope(msg.content);
      if (envelope.type !== 'reply' || envelope.correlationId === undefined) throw new MalformedEnvelopeError(`expected a reply, got ${envelope.type}`);
    } catch (err) {
      this.options.log.warn({ err: (err as Error).message, correlationId }, 'unreadable reply');
      if (correlationId) this.settle(correlationId, { error: unreadableReply(err) });
      return;
    }
    this.settleFromReply(envelope.correlationId, envelope, this.replierOf(msg, envelope));
  }

  /** Publishes one turn's asks to a shard: alone as an `ask`, or together as an `ask-batch` (ask-batch.ts). */
  private sendAsks(shard: number, asks: readonly Outgoing[]): void {
    this.publishAsks(this.options.names.shardExchange, String(shard), asks, { persistent: true, mandatory: false }, (live, error) => {
      for (const a of live) this.settle(a.id, { error });
    });
  }

  /**
   * Publishes one turn's owner-routed asks to a holder's inbox. `mandatory`: an inbox that is gone (its node died or
   * reconnected) returns the message, and its asks go again through their shard queues (`onReturned`).
   */
  private sendToInbox(inbox: string, asks: readonly Outgoing[]): void {
    // An ask re-sent through the queue while it waited for this turn to end has left this route.
    const still = asks.filter((a) => this.pending.get(a.id)?.route === inbox);
    const sent = this.publishAsks('', inbox, still, { persistent: false, mandatory: true }, () => this.rerouteAsks((ask) => ask.route === inbox));
    if (sent > 0) this.options.metrics?.routedAsks.inc(sent);
  }

  /** One `ask` or `ask-batch` message; answers how many asks it carried. `failed` gets them if the broker refuses. */
  private publishAsks(
    exchange: string, routingKey: string, asks: readonly Outgoing[], delivery: { persistent: boolean; mandatory: boolean },
    failed: (asks: readonly Outgoing[], error: TroupeError) => void,
  ): number {
    // An ask that timed out or was failed by a disconnect while it waited for the turn to end is not sent.
    const live = asks.filter((a) => this.pending.has(a.id));
    if (live.length === 0) return 0;
    const session = this.options.link.session;
    if (session === undefined) {
      for (const a of live) this.settle(a.id, { error: new TroupeError('TRANSPORT_UNAVAILABLE', 'not connected to the message broker') });
      return 0;
    }
    const single = live.length === 1 ? live[0]! : undefined;
    const body = single ? single.body : encodeBatch(live.map((a) => a.body));
    const id = single ? single.id : newMessageId();
    try {
      session.publisher.publish(
        exchange,
        routingKey,
        body,
        {
          ...delivery, replyTo: DIRECT_REPLY_TO, messageId: id, contentType: 'application/json',
          ...(single ? { correlationId: id, type: 'ask' } : { type: ASK_BATCH_TYPE }),
        },
        (err: unknown) => {
          if (err) failed(live, new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker did not accept the message'));
        },
      );
      this.options.metrics?.askMessages.inc();
      return live.length;
    } catch (err) {
      for (const a of live) this.settle(a.id, { error: new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker channel is closed', { reason: (err as Error).message }) });
      return 0;
    }
  }

  /** Sends the matching owner-routed asks again through their shard queues, in the order they were made. */
  private rerouteAsks(matches: (ask: PendingAsk) => boolean): void {
    for (const [id, ask] of this.pending) {
      if (ask.route === QUEUE_ROUTE || !matches(ask)) continue;
      this.options.routes.rerouted(ask.address, ask.route);
      ask.route = QUEUE_ROUTE;
      // No tell mark: the copy on the inbox may still answer first, which would prove nothing about the queue.
      ask.tellMark = undefined;
      this.outbox.add(ask.shard, { id, body: ask.body });
      this.options.metrics?.reroutedAsks.inc();
    }
  }

  private settle(id: string, outcome: { value: unknown } | { error: TroupeError }): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    this.options.routes.settled(pending.address);
    const metrics = this.options.metrics;
    if (metrics) {
      metrics.countAsk('error' in outcome ? outcome.error.code : 'ok');
      metrics.askSeconds.observe((performance.now() - pending.startedAt) / 1000);
    }
    if ('error' in outcome) pending.reject(outcome.error);
    else pending.resolve(outcome.value);
  }

  /**
   * A reply for an ask that already timed out (or belongs to no one) finds nothing pending and is dropped. A
   * readable one also tells where the ask's shard is held (`replier`, with the reply's inbox header).
   */
  private settleFromReply(askId: string, envelope: Envelope, replier: Replier): void {
    let reply: Reply;
    try {
      reply = readReply(envelope);
    } catch (err) {
      this.options.log.warn({ err: (err as Error).message, correlationId: askId }, 'unreadable reply');
      this.settle(askId, { error: unreadableReply(err) });
      return;
    }
    const pending = this.pending.get(askId);
    if (pending !== undefined && this.options.ownerRouting) this.options.routes.answered(pending.shard, replier, pending.tellMark);
    this.settle(askId, reply.ok ? { value: reply.value } : { error: fromWire(reply.error) });
  }

  /**
   * Who answered, and the inbox its reply named. Only an inbox of the replying node's own name (as `names.inbox`
   * makes it) counts: a header naming anything else (a shard queue, an asker's reply-to) would send asks there.
   */
  private replierOf(msg: ConsumeMessage, reply: Envelope): Replier {
    const inbox: unknown = msg.properties.headers?.[INBOX_HEADER];
    const own = `${this.options.prefix}.inbox.${reply.from}.`;
    return typeof inbox === 'string' && inbox.startsWith(own) && INBOX_SUFFIX.test(inbox.slice(own.length))
      ? { nodeId: reply.from, inbox }
      : { nodeId: reply.from };
  }

  private onReplyBatch(msg: ConsumeMessage): void {
    let replies: Envelope[];
    try {
      replies = decodeBatch(msg.content, 'reply');
    } catch (err) {
      // Nothing in it can be trusted to name an ask: those asks time out, as with a lost reply.
      this.options.log.warn({ err: (err as Error).message }, 'unreadable reply batch');
      return;
    }
    for (const envelope of replies) this.settleFromReply(envelope.correlationId!, envelope, this.replierOf(msg, envelope));
  }
}

/** Resolves true when `promise` settles within `ms`, false otherwise. */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    const done = () => {
      clearTimeout(timer);
      resolve(true);
    };
    promise.then(done, done);
  });
}

/** What an asker gets for a reply it cannot read; a peer on another envelope version is named as such. */
function unreadableReply(err: unknown): TroupeError {
  return err instanceof EnvelopeVersionError
    ? new TroupeError('INTERNAL', err.message, { version: err.received })
    : new TroupeError('INTERNAL', 'the reply was malformed');
}
