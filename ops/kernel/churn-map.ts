/**
 * Map and Set for keys that come and go at message or request rate: pending asks, per-address and per-shard counts,
 * a mailbox's tail per address, in-flight requests.
 *
 * Why not a plain Map: once a Map's hash table has been promoted to the old generation (it lived through two
 * scavenges, in a quiet spell say), V8 allocates every later table of that Map (on growth, rehash or `clear`) in the
 * old generation too, and a table it replaces keeps its entries' pointers until a full collection. Under churn
 * those dead old tables point at young entries, and every scavenge must treat them as live: about a tenth of all
 * garbage survived and was promoted. On the G4 bench's asker each scavenge copied ~1.4 MB where ~0.1 MB was live and
 * took 5 ms instead of 1, and the Map stays that way for good (decision 0019, "Garbage kept alive by hash tables").
 * A fresh Map starts with a young table, so moving the live entries into one from time to time ends it.
 *
 * Renewal happens once per `renewEvery` (1,024) insertions of new keys, or twice the live size if larger, so its
 * cost per insertion stays constant when a backlog builds up. It happens only in `set`/`add`: an iteration whose
 * body deletes entries sees every change; one whose body adds keys, or clears, may go on walking the table it
 * started on.
 */
const RENEW_EVERY = 1024;

export class ChurnMap<K, V> implements Iterable<[K, V]> {
  private map = new Map<K, V>();
  private inserted = 0;

  /** `renewEvery` other than the default is for tests, which need renewals within a few operations. */
  constructor(private readonly renewEvery = RENEW_EVERY) {}

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
    // The size tells a new key from an overwritten one without a second lookup.
    const before = this.map.size;
    this.map.set(key, value);
    if (this.map.size > before && ++this.inserted >= Math.max(this.renewEvery, 2 * this.map.size)) {
      this.inserted = 0;
      this.map = new Map(this.map);
    }
    return this;
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  /** A fresh Map rather than `Map.prototype.clear`, whose new table would be old-generation as the one it replaces. */
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
  private readonly entries: ChurnMap<K, true>;

  constructor(renewEvery = RENEW_EVERY) {
    this.entries = new ChurnMap(renewEvery);
  }

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
