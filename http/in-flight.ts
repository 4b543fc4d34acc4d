/**
 * The requests a server has taken in and not yet finished, for its graceful shutdown (wait until none is left, then
 * drop what remains). An intrusive doubly linked list: adding and removing a request writes four fields, where a
 * Set hashed the exchange twice per request, a measurable share of a heartbeat's CPU (issue 19).
 */
export interface InFlightLink {
  inFlightPrev: InFlightLink | undefined;
  inFlightNext: InFlightLink | undefined;
  inFlightListed: boolean;
}

export class InFlightList<T extends InFlightLink> {
  private head: T | undefined;
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(item: T): void {
    if (item.inFlightListed) return;
    item.inFlightListed = true;
    item.inFlightPrev = undefined;
    item.inFlightNext = this.head;
    if (this.head !== undefined) this.head.inFlightPrev = item;
    this.head = item;
    this.count++;
  }

  delete(item: T): void {
    if (!item.inFlightListed) return;
    item.inFlightListed = false;
    const { inFlightPrev: prev, inFlightNext: next } = item;
    if (prev !== undefined) prev.inFlightNext = next;
    else this.head = next as T | undefined;
    if (next !== undefined) next.inFlightPrev = prev;
    item.inFlightPrev = undefined;
    item.inFlightNext = undefined;
    this.count--;
  }

  /** A copy, so the caller may finish items while walking it. */
  toArray(): T[] {
    const out: T[] = [];
    for (let at = this.head; at !== undefined; at = at.inFlightNext as T | undefined) out.push(at);
    return out;
  }
}
