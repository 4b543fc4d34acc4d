import { ChurnMap } from '../../ops/kernel/churn-map.js';

/**
 * Where may an ask to a shard held by another node go straight to that node's inbox instead of through the shard's
 * quorum queue (ops/decisions/0019-owner-routed-asks.md)? Pure bookkeeping; the AMQP transport feeds it.
 *
 * The holder of a shard is learnt from replies: every reply names the inbox of the node that answered it, and a node
 * only answers asks of shards it holds (a node that no longer holds one forwards the ask to the shard queue, and
 * the reply then names the new holder). An ask to address A on shard S goes to S's holder's inbox when:
 *
 * 1. A has nothing outstanding on another route. Asks to A still unanswered pin A to the route they took (the shard
 *    queue or one inbox), so a later ask cannot overtake an earlier one by taking a faster road.
 * 2. S has no tell of ours that may still be waiting in its queue. Tells always take the queue (they must be durable
 *    when they resolve); after one, asks to S take the queue too until one sent after the tell has been answered,
 *    which proves (the queue being FIFO) that the tell has reached its address's turn on the holder.
 *
 * The holder itself checks that it still holds S and that no message waits in S's queue (shortcut.ts, rule 3) before
 * it runs a routed ask; otherwise it forwards it to the queue. A holder that is gone is forgotten (`forget`), and
 * the asks that were waiting on it are sent again through the queue.
 */
export const QUEUE_ROUTE = 'queue';

export interface ShardHolder {
  readonly nodeId: string;
  readonly inbox: string;
}

/** The node that answered an ask, and the inbox its reply named (none when that node routes nothing). */
export interface Replier {
  readonly nodeId: string;
  readonly inbox?: string;
}

export class OwnerRoutes {
  private readonly holders = new Map<number, ShardHolder>();
  /** Inbox → its node, for every inbox an outstanding ask may still be pinned to (not only current holders). */
  private readonly inboxNodes = new Map<string, string>();
  /** Shard → tells of ours sent to it so far. */
  private readonly tellsSent = new Map<number, number>();
  /** Shard → tells of ours known to have reached the holder (a later queue ask was answered). */
  private readonly tellsReached = new Map<number, number>();
  /** Address → the route of its outstanding asks, and how many there are. */
  private readonly pins = new ChurnMap<string, { route: string; count: number }>();
  /** Address → callers waiting until none of its asks is outstanding on an inbox. */
  private readonly offInboxWaiters = new Map<string, Array<() => void>>();

  constructor(private readonly selfNodeId: string) {}

  /**
   * The inbox to send an ask to, or QUEUE_ROUTE. Call `sent` with the answer when the ask leaves. `heldHere`: this
   * node holds the shard itself, so any holder we knew is stale (the ask goes through the queue, to us).
   */
  route(shard: number, address: string, heldHere = false): string {
    const pin = this.pins.get(address);
    if (pin) return pin.route;
    if (heldHere || (this.tellsSent.get(shard) ?? 0) !== (this.tellsReached.get(shard) ?? 0)) return QUEUE_ROUTE;
    return this.holders.get(shard)?.inbox ?? QUEUE_ROUTE;
  }

  /** True while any ask to `address` is outstanding through the broker, on whatever route. */
  hasOutstanding(address: string): boolean {
    return this.pins.has(address);
  }

  sent(address: string, route: string): void {
    const pin = this.pins.get(address);
    if (pin === undefined) this.pins.set(address, { route, count: 1 });
    else if (pin.route === route) pin.count += 1;
    else throw new Error(`an ask to ${address} took ${route} while its earlier asks are on ${pin.route}`);
  }

  /** An ask left its route: answered, failed or timed out. */
  settled(address: string): void {
    const pin = this.pins.get(address);
    if (!pin) return;
    if (--pin.count > 0) return;
    this.pins.delete(address);
    this.wakeOffInbox(address);
  }

  hasRoutedAsks(address: string): boolean {
    const pin = this.pins.get(address);
    return pin !== undefined && pin.route !== QUEUE_ROUTE;
  }

  /**
   * Undefined when no ask to `address` is outstanding on an inbox; otherwise resolves once none is (answered, or
   * moved to the queue). A tell waits for it: it takes the queue, and must not overtake an ask sent before it.
   */
  offInboxes(address: string): Promise<void> | undefined {
    const pin = this.pins.get(address);
    if (!pin || pin.route === QUEUE_ROUTE) return undefined;
    return new Promise((resolve) => {
      const waiters = this.offInboxWaiters.get(address);
      if (waiters) waiters.push(resolve);
      else this.offInboxWaiters.set(address, [resolve]);
    });
  }

  /** The tell count an ask to `shard` leaving through the queue now carries; `answered` hands it back. */
  tellMark(shard: number): number {
    return this.tellsSent.get(shard) ?? 0;
  }

  /** Also for a tell whose publish failed: it may still arrive, so the next ask to its shard takes the queue. */
  tellSent(shard: number): void {
    this.tellsSent.set(shard, (this.tellsSent.get(shard) ?? 0) + 1);
  }

  /**
   * An ask to `shard` was answered by `replier`. `tellMark` is the count it carried if it went through the queue:
   * every tell sent before it has then reached the holder. A reply from another node than the holder we knew, naming
   * no inbox (a node with routing off), ends what we knew: routing on to the old holder would only be forwarded.
   */
  answered(shard: number, replier: Replier | undefined, tellMark?: number): void {
    if (tellMark !== undefined && tellMark > (this.tellsReached.get(shard) ?? 0)) this.tellsReached.set(shard, tellMark);
    if (replier === undefined) return;
    if (replier.nodeId === this.selfNodeId) this.holders.delete(shard);
    else if (replier.inbox !== undefined) {
      this.holders.set(shard, { nodeId: replier.nodeId, inbox: replier.inbox });
      this.inboxNodes.set(replier.inbox, replier.nodeId);
    } else if (this.holders.get(shard)?.nodeId !== replier.nodeId) this.holders.delete(shard);
  }


  /** Addresses whose outstanding asks moved from `inbox` to the shard queue (their holder went away). */
  rerouted(address: string, inbox: string): void {
    const pin = this.pins.get(address);
    if (pin && pin.route === inbox) {
      pin.route = QUEUE_ROUTE;
      this.wakeOffInbox(address);
    }
  }

  /** Forgets every inbox (and the shards it held) for which `gone` is true; answers the inboxes forgotten. */
  forget(gone: (holder: ShardHolder) => boolean): Set<string> {
    const inboxes = new Set<string>();
    for (const [inbox, nodeId] of this.inboxNodes) {
      if (!gone({ nodeId, inbox })) continue;
      this.inboxNodes.delete(inbox);
      inboxes.add(inbox);
    }
    for (const [shard, holder] of this.holders) {
      if (!gone(holder)) continue;
      this.holders.delete(shard);
      inboxes.add(holder.inbox);
    }
    return inboxes;
  }

  holderOf(shard: number): ShardHolder | undefined {
    return this.holders.get(shard);
  }

  private wakeOffInbox(address: string): void {
    const waiters = this.offInboxWaiters.get(address);
    if (!waiters) return;
    this.offInboxWaiters.delete(address);
    for (const wake of waiters) wake();
  }
}
