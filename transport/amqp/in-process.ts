import type { Logger } from '../../ops/kernel/logger.js';
import { TroupeError, asTroupeError, fromWire } from '../../ops/kernel/errors.js';
import type { DeliveryHandler } from '../port.js';
import type { KeyedSerial } from '../keyed-serial.js';
import { askDeadline } from '../deadlines.js';
import { copyAcrossWire, createEnvelope, errorReply, inTraceOf, okReply, type Reply } from '../envelope.js';
import type { TransportMetrics } from './metrics.js';
import type { ShortcutGate } from './shortcut.js';
import type { OwnerRoutes } from './owner-routes.js';
import type { ShardOwnership } from './shard-ownership.js';

export interface InProcessAsksOptions {
  /** Off: every ask takes the broker. */
  readonly enabled: boolean;
  readonly nodeId: string;
  readonly handler: DeliveryHandler;
  readonly ownership: ShardOwnership;
  readonly gate: ShortcutGate;
  readonly routes: OwnerRoutes;
  readonly mailboxes: KeyedSerial;
  readonly log: Logger;
  readonly metrics: TransportMetrics | undefined;
}

/** Asks to a shard this node holds, run without the broker when that cannot overtake anything (shortcut.ts). */
export class InProcessAsks {
  constructor(private readonly options: InProcessAsksOptions) {}

  /** True when an ask may run here without the broker (transport/amqp/shortcut.ts states the rule). */
  may(shard: number, address: string): boolean {
    const { enabled, ownership, gate, routes } = this.options;
    // Rule 2 for asks: none to this address outstanding through the broker, on the queue or on another node's inbox
    // (one sent there before we held the shard must not be overtaken). The gate keeps the rest of the rule.
    return enabled && ownership.holdsForLocalRun(shard) && gate.canShortcut(shard, address) && !routes.hasOutstanding(address);
  }

  /**
   * The broker path without the broker: the message and its reply are copied as the wire copies them
   * (copyAcrossWire), the ask waits its turn behind every delivery to its address already taken, an expired one is
   * dropped, and a handover of the shard waits for it (it counts as in flight). A handler crash answers INTERNAL at
   * once: there is no broker to redeliver.
   */
  ask<R>(shard: number, address: string, message: unknown, timeoutMs: number): Promise<R> {
    const { nodeId, handler, ownership, mailboxes, log, metrics } = this.options;
    const envelope = createEnvelope({ type: 'ask', to: address, from: nodeId, deadline: Date.now() + timeoutMs, payload: copyAcrossWire(message) });
    const startedAt = performance.now();
    ownership.table.begin(shard);
    return new Promise<R>((resolve, reject) => {
      let settled = false;
      const finish = (outcome: { value: unknown } | { error: TroupeError }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (metrics) {
          metrics.countAsk('error' in outcome ? outcome.error.code : 'ok');
          metrics.askSeconds.observe((performance.now() - startedAt) / 1000);
          metrics.inProcessAsks.inc();
        }
        if ('error' in outcome) reject(outcome.error);
        else resolve(outcome.value as R);
      };
      const timer = setTimeout(
        () => finish({ error: new TroupeError('TRANSPORT_TIMEOUT', undefined, { address: envelope.to, timeoutMs }) }),
        timeoutMs,
      );
      void mailboxes
        .run(envelope.to, async () => {
          if (Date.now() > envelope.deadline) {
            metrics?.countDelivery('expired');
            return;
          }
          let reply: Reply;
          try {
            reply = okReply(await inTraceOf(envelope, () => handler(envelope.to, envelope.payload, askDeadline(envelope))));
          } catch (err) {
            if (!(err instanceof TroupeError)) {
              log.error({ err, address: envelope.to, messageId: envelope.id }, 'delivery handler crashed on an in-process ask');
              metrics?.countDelivery('crashed');
            }
            reply = errorReply(asTroupeError(err));
          }
          metrics?.countDelivery(reply.ok ? 'ok' : 'rejected');
          let answer: Reply;
          try {
            answer = copyAcrossWire(reply);
          } catch (err) {
            log.error({ err, address: envelope.to }, 'reply could not be encoded');
            answer = errorReply(asTroupeError(err));
          }
          finish(answer.ok ? { value: answer.value } : { error: fromWire(answer.error) });
        })
        .catch((err: unknown) => finish({ error: asTroupeError(err) }))
        .finally(() => ownership.table.end(shard));
    });
  }
}
