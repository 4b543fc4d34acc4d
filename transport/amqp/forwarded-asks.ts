import { ChurnMap } from '../../ops/kernel/churn-map.js';

/**
 * Routed asks a holder passed on to their shard queue and has not yet seen come back from it (owner-routes.ts). A
 * later routed ask to the same address must follow them through the queue: run at once, it would overtake them.
 * Pure bookkeeping; the AMQP transport feeds it, and only for asks of shards it holds (an ask of a shard it does
 * not hold is forwarded whatever this says). A forwarded ask may never come back here (another node takes it after
 * a handover), so its mark ends at the ask's deadline, when the queue drops it anyway, and losing or handing over a
 * shard drops the marks of its asks.
 */
export class ForwardedAsks {
  private readonly byId = new ChurnMap<string, { readonly address: string; readonly shard: number }>();
  /** Address → ids of its forwarded asks, and the latest of their deadlines (epoch ms). */
  private readonly perAddress = new ChurnMap<string, { readonly ids: Set<string>; until: number }>();

  add(id: string, address: string, shard: number, deadline: number): void {
    if (this.byId.has(id)) return;
    this.byId.set(id, { address, shard });
    const entry = this.perAddress.get(address);
    if (entry === undefined) this.perAddress.set(address, { ids: new Set([id]), until: deadline });
    else {
      entry.ids.add(id);
      entry.until = Math.max(entry.until, deadline);
    }
  }

  /** The ask arrived back as a delivery of its shard queue (it is in its address's turn), or its forward failed. */
  done(id: string): void {
    const forwarded = this.byId.get(id);
    if (forwarded === undefined) return;
    this.byId.delete(id);
    const entry = this.perAddress.get(forwarded.address);
    entry?.ids.delete(id);
    if (entry?.ids.size === 0) this.perAddress.delete(forwarded.address);
  }

  waitingFor(address: string, now = Date.now()): boolean {
    const entry = this.perAddress.get(address);
    if (entry === undefined) return false;
    if (now <= entry.until) return true;
    for (const id of entry.ids) this.byId.delete(id);
    this.perAddress.delete(address);
    return false;
  }

  dropShard(shard: number): void {
    for (const [id, forwarded] of this.byId) if (forwarded.shard === shard) this.done(id);
  }

  dropAll(): void {
    this.byId.clear();
    this.perAddress.clear();
  }
}
