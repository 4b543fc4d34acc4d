import type { Channel, GetMessage } from 'amqplib';
import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { DeadLetterBox, DeadLetterOutcome, DeadLetterPage, DeadLetterSelection } from '../port.js';
import { SelectionTracker, describeDeadLetter } from '../dead-letter-view.js';
import type { BrokerConnection } from './connection.js';
import type { ManagementApi } from './management-api.js';
import { policyCommands, upgradeOlderQueues, type PolicySpec } from './dead-letter-policy.js';

export interface AmqpDeadLettersOptions {
  readonly deadLetterQueue: string;
  readonly bound: number;
  readonly link: BrokerConnection;
  /** Sends a replayed message: the transport's own tell (confirmed by the broker when it resolves). */
  readonly tell: (address: string, message: unknown) => Promise<void>;
  /** Where older queues get their policies from; undefined: the operator sets them (README "Dead letters"). */
  readonly management: ManagementApi | undefined;
  readonly policies: readonly PolicySpec[];
  readonly log: Logger;
}

/**
 * The cluster's dead-letter queue, read and changed over AMQP on a channel of each operation's own: messages are
 * taken with `basic.get` and left unacknowledged, so closing the channel puts back everything not replayed or
 * purged, in order. One queue for the cluster: any node answers for all of it.
 *
 * It also knows whether dead-lettering is at-least-once: true for queues this version declared, and for older
 * ones (declared with other arguments, see topology.ts `mayPredate`) once the dead-letter policies took on them.
 */
export class AmqpDeadLetters implements DeadLetterBox {
  private strategy: DeadLetterPage['strategy'] = 'at-least-once';
  private upgrading: Promise<void> | undefined;

  constructor(private readonly options: AmqpDeadLettersOptions) {}

  /** After each connection's declarations: the queues an older Troupe declared, which need the policies. */
  noteDeclared(predating: readonly string[]): void {
    const { management, policies, log } = this.options;
    if (predating.length === 0) {
      this.strategy = 'at-least-once';
      return;
    }
    if (this.upgrading) return;
    this.strategy = 'at-most-once';
    const commands = policyCommands(management?.vhost ?? '/', policies);
    log.warn({ queues: predating.length, first: predating[0] }, 'queues declared by an older Troupe: dead-lettering is at-most-once on them until the dead-letter policies apply (decision 0048)');
    if (management === undefined) {
      log.error({ commands }, 'no management API to set the dead-letter policies with; run these on the broker');
      return;
    }
    this.upgrading = upgradeOlderQueues(management, policies, predating, this.options.deadLetterQueue, log).then(
      (ok) => {
        if (!ok) return;
        this.strategy = 'at-least-once';
        log.info({ queues: predating.length, policies: policies.map((p) => p.name) }, 'dead-letter policies applied: dead-lettering is at-least-once and the dead-letter queue bounded');
      },
      (err: unknown) => log.error({ err: (err as Error).message, commands }, 'could not set the dead-letter policies through the management API; run these on the broker'),
    ).finally(() => (this.upgrading = undefined));
  }

  /** Resolves once a policy upgrade under way has finished (tests, and a node's start when it must know). */
  async settled(): Promise<void> {
    await this.upgrading;
  }

  list(limit: number): Promise<DeadLetterPage> {
    return this.withChannel(async (channel, total) => {
      const items = [];
      while (items.length < Math.min(limit, total)) {
        const msg = await channel.get(this.options.deadLetterQueue, { noAck: false });
        if (msg === false) break;
        items.push(describe(msg).letter);
      }
      return { items, total, bound: this.options.bound, strategy: this.strategy, overflowed: 0 };
    });
  }

  replay(selection: DeadLetterSelection): Promise<DeadLetterOutcome> {
    return this.scan(selection, async (ack, msg, id, done, unreadable) => {
      const { envelope } = describe(msg);
      if (envelope === undefined) return unreadable.push(id);
      await this.options.tell(envelope.to, envelope.payload);
      // Acked once the replay is confirmed: a crash in between replays it twice, never zero times.
      ack(msg);
      done.push(id);
    });
  }

  purge(selection: DeadLetterSelection): Promise<DeadLetterOutcome> {
    return this.scan(selection, async (ack, msg, id, done) => {
      ack(msg);
      done.push(id);
    });
  }

  /** Walks the queue once (what was there when it began), handing each selected dead letter to `act`. */
  private scan(
    selection: DeadLetterSelection,
    act: (ack: (msg: GetMessage) => void, msg: GetMessage, id: string, done: string[], unreadable: string[]) => Promise<unknown>,
  ): Promise<DeadLetterOutcome> {
    return this.withChannel(async (channel, total, ack) => {
      const tracker = new SelectionTracker(selection);
      const done: string[] = [];
      const unreadable: string[] = [];
      for (let seen = 0; seen < total && !tracker.complete; seen += 1) {
        const msg = await channel.get(this.options.deadLetterQueue, { noAck: false });
        if (msg === false) break;
        const id = describe(msg).letter.id;
        if (tracker.takes(id)) await act(ack, msg, id, done, unreadable);
      }
      return { done, notFound: tracker.notFound(), unreadable };
    });
  }

  /**
   * Runs `work` on a channel of its own with the queue's depth when it began. What `work` took and did not ack is
   * returned before the channel closes, and only once the queue shows it again does the call resolve: the broker
   * returns a closed channel's messages asynchronously, and a list or purge right after would miss them.
   */
  private async withChannel<T>(work: (channel: Channel, total: number, ack: (msg: GetMessage) => void) => Promise<T>): Promise<T> {
    const session = this.options.link.session;
    if (session === undefined) throw new TroupeError('TRANSPORT_UNAVAILABLE', 'the broker is not connected');
    let channel: Channel;
    try {
      channel = await session.model.createChannel();
    } catch (err) {
      throw new TroupeError('TRANSPORT_UNAVAILABLE', `could not open a channel: ${(err as Error).message}`);
    }
    channel.on('error', (err: Error) => this.options.log.warn({ err: err.message }, 'dead-letter channel closed by the broker'));
    const queue = this.options.deadLetterQueue;
    let acked = 0;
    const ack = (msg: GetMessage) => {
      channel.ack(msg);
      acked += 1;
    };
    try {
      const { messageCount: total } = await channel.checkQueue(queue);
      const result = await work(channel, total, ack);
      channel.nackAll(true);
      for (const until = Date.now() + 3_000; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 20))) {
        if ((await channel.checkQueue(queue)).messageCount >= total - acked) break;
      }
      return result;
    } catch (err) {
      if (err instanceof TroupeError) throw err;
      throw new TroupeError('TRANSPORT_UNAVAILABLE', `the dead-letter queue could not be read: ${(err as Error).message}`);
    } finally {
      // Whatever is still unacknowledged goes back to the queue, in order.
      await channel.close().catch(() => undefined);
    }
  }
}

interface Death {
  reason?: unknown;
  time?: unknown;
}

function describe(msg: GetMessage) {
  const headers = msg.properties.headers ?? {};
  const deaths = Array.isArray(headers['x-death']) ? (headers['x-death'] as Death[]) : [];
  // The newest death comes first in x-death.
  const last = deaths[0];
  const reason = typeof last?.reason === 'string' ? last.reason : typeof headers['x-first-death-reason'] === 'string' ? headers['x-first-death-reason'] : 'unknown';
  return describeDeadLetter(msg.content, { messageId: msg.properties.messageId as string | undefined, reason, at: timestampOf(last?.time) });
}

/** AMQP timestamps are whole seconds; amqplib gives them as `{'!': 'timestamp', value}` or a number. */
function timestampOf(value: unknown): Date | null {
  const seconds = typeof value === 'number' ? value : typeof (value as { value?: unknown } | undefined)?.value === 'number' ? (value as { value: number }).value : undefined;
  return seconds === undefined ? null : new Date(seconds * 1000);
}
