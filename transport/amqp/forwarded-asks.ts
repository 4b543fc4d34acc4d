/**
 * Routed asks a holder passed on to their shard queue and has not yet seen come back from it (owner-routes.ts). A
 * later routed ask to the same address must follow them through the queue: run at once, it would overtake them.
 * Pure bookkeeping; the AMQP transport feeds it. A forwarded ask taken by another node never comes back here, so
 * losing or handing over a shard drops what was waiting on it (this node forwards every ask of that shard anyway).
 */
export class ForwardedAsks {
  private readonly byId = new Map<string, { readonly address: string; readonly shard: number }>();
  private readonly perAddress = new Map<string, number>();

  add(id: string, address: string, shard: number): void {
    if (this.byId.has(id)) return;
    this.byId.set(id, { address, shard });
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
  }

  /** The ask arrived back as a delivery of its shard queue (it is in its address's turn), or its forward failed. */
  done(id: string): void {
    const forwarded = this.byId.get(id);
    if (forwarded === undefined) return;
    this.byId.delete(id);
    const left = (this.perAddress.get(forwarded.address) ?? 1) - 1;
    if (left > 0) this.perAddress.set(forwarded.address, left);
    else this.perAddress.delete(forwarded.address);
  }

  waitingFor(address: string): boolean {
    return this.perAddress.has(address);
  }

  dropShard(shard: number): void {
    for (const [id, forwarded] of this.byId) if (forwarded.shard === shard) this.done(id);
  }

  dropAll(): void {
    this.byId.clear();
    this.perAddress.clear();
  }
}
