import { randomBytes } from 'node:crypto';
import { Tally } from '../tally.js';
import { ChurnMap } from '../../ops/kernel/churn-map.js';

/** A seal whose marker has not come back within this long is sent again (the marker died with a channel). */
const RESEAL_AFTER_MS = 5_000;

interface Seal {
  readonly token: string;
  readonly sentAt: number;
  open: boolean;
}

/**
 * When may an ask to a shard this node holds skip the broker without overtaking anything (ops/decisions/
 * 0010-cluster-placement.md, "In-process shortcut")? Pure bookkeeping; the AMQP transport feeds it. An ask to
 * address A on shard S runs in-process only when all of these hold:
 *
 * 1. S is sealed: after this node learnt it holds S, it sent a marker through S's queue and that marker came back
 *    to it. The queue is FIFO and every delivery enters its address's turn the moment it arrives, so everything this
 *    node had sent to S through the broker before the marker is already queued in-process ahead of anything new.
 * 2. Nothing this node sent to A through the broker is still outstanding: no tell not yet delivered back to this
 *    node (tells always take the broker: they must be durable when they resolve), kept here, and no ask unanswered,
 *    which the transport checks with OwnerRoutes (it counts every ask until it settles, whatever its route).
 * 3. S's consumer has credit left (unacknowledged broker deliveries below the prefetch window): RabbitMQ only keeps
 *    a ready message from a consumer that has no credit, so with credit left no message of another node is waiting
 *    in S's queue, only possibly on the wire. That keeps a causal chain across nodes (a tell confirmed on node B,
 *    then an ask on this node) in order unless the two race within a loopback round trip.
 *
 * Any doubt about holding S (a handover starts, the connection drops, the broker view no longer confirms it) drops
 * the seal; messages sent through the broker from then on are covered by the next seal.
 */
export class ShortcutGate {
  private readonly seals = new Map<number, Seal>();
  /** Address → tells this node sent through the broker to it while its shard had a seal, not yet delivered back. */
  private readonly outstanding = new Tally<string>();
  /** Tells sent through the broker while their shard had a seal: id → where, until they are delivered back. */
  private readonly tells = new ChurnMap<string, { readonly address: string; readonly shard: number }>();
  /** Shard → broker deliveries handed to the handler and not yet settled (the consumer's used credit). */
  private readonly unacked = new Tally<number>();

  constructor(private readonly prefetch: number) {}

  /** A token to send through the shard's queue as a seal marker, or undefined when one is open or on its way. */
  beginSeal(shard: number, now = Date.now()): string | undefined {
    const seal = this.seals.get(shard);
    if (seal && (seal.open || now - seal.sentAt < RESEAL_AFTER_MS)) return undefined;
    const token = randomBytes(8).toString('hex');
    this.seals.set(shard, { token, sentAt: now, open: false });
    return token;
  }

  /** A marker arrived at this node as the shard's active consumer; only the latest one of ours opens the seal. */
  sealArrived(shard: number, token: unknown): void {
    const seal = this.seals.get(shard);
    if (seal && seal.token === token) seal.open = true;
  }

  /** This node is no longer sure it holds the shard. */
  drop(shard: number): void {
    this.seals.delete(shard);
    for (const [id, tell] of this.tells) {
      if (tell.shard !== shard) continue;
      this.tells.delete(id);
      this.outstanding.remove(tell.address);
    }
  }

  dropAll(): void {
    // `unacked` stays: deliveries of the old connection still settle and count themselves out.
    for (const shard of [...this.seals.keys()]) this.drop(shard);
  }

  /** Rules 1 and 3, and rule 2 for tells. */
  canShortcut(shard: number, address: string): boolean {
    return this.sealed(shard) && !this.outstanding.has(address) && this.hasCredit(shard);
  }

  /** Rule 1 alone: our own marker came back through the shard's queue, so we really are its active consumer. */
  sealed(shard: number): boolean {
    return this.seals.get(shard)?.open ?? false;
  }

  /** Rule 3 alone: no message of this shard waits in its queue for our consumer's credit. */
  hasCredit(shard: number): boolean {
    return this.unacked.get(shard) < this.prefetch;
  }

  tellSent(shard: number, address: string, id: string): void {
    if (!this.seals.has(shard)) return;
    this.tells.set(id, { address, shard });
    this.outstanding.add(address);
  }

  /** A tell of ours came back as a delivery (its turn is taken), or its publish failed. */
  tellDone(id: string): void {
    const tell = this.tells.get(id);
    if (!tell) return;
    this.tells.delete(id);
    this.outstanding.remove(tell.address);
  }

  deliveryTaken(shard: number): void {
    this.unacked.add(shard);
  }

  deliverySettled(shard: number): void {
    this.unacked.remove(shard);
  }
}
