/**
 * Map and Set for keys that come and go at message rate: pending asks, per-address and per-shard counts, a mailbox's
 * tail per address.
 *
 * Why not a plain Map: V8 links every hash table a Map or Set outgrows, rehashes or clears to the table that replaces
 * it. Once one of those tables has been promoted to the old generation, each successor stays reachable from it until
 * the next full collection, and so does every entry it held. Under steady churn that chain makes a tenth of all the
 * garbage survive scavenges: on the G4 bench's asker each scavenge copied and promoted ~1.4 MB where ~0.1 MB was live,
 * and took 5 ms instead of 1 (decision 0019, "Garbage kept alive by hash tables"). Moving the live entries into a
 * fresh Map every `renewEvery` insertions ends any such chain; the copy costs a few microseconds.
 *
 * Renewal happens only in `set`/`add` of a new key: an iteration whose body deletes entries sees every change, one
 * whose body adds keys may iterate the table as it was before the renewal.
 */
const RENEW_EVERY = 1024;

export class ChurnMap<K, V> implements Iterable<[K, V]> {
  private map = new Map<K, V>();
  private inserted = 0;

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  has(key: K): boolean {
    return this.map.has(key);
  }

  set(key: K, value: V): this {
    if (!this.map.has(key) && ++this.inserted >= RENEW_EVERY) {
      this.inserted = 0;
      this.map = new Map(this.map);
    }
    this.map.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  /** A fresh table rather than `Map.prototype.clear`, which links the old table to the new one like a rehash. */
  clear(): void {
    this.map = new Map();
    this.inserted = 0;
  }

  keys(): IterableIterator<K> {
    return this.map.keys();
  }

  values(): IterableIterator<V> {
    return this.map.values();
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.map[Symbol.iterator]();
  }
}

export class ChurnSet<K> implements Iterable<K> {
  private readonly entries = new ChurnMap<K, true>();

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  add(key: K): this {
    this.entries.set(key, true);
    return this;
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  [Symbol.iterator](): IterableIterator<K> {
    return this.entries.keys();
  }
}
