/**
 * A bounded, least-recently-used memo of verified credentials, with revocation by tag.
 *
 * Each entry names the tags whose revocation must end it (`apiKey:<id>`, `member:<org>:<user>`, …) and the
 * revocation sequence number current when its lookup *started*. A revocation records its tag with a new sequence
 * number and drops matching entries; a lookup that was already in flight when the revocation arrived is refused
 * on read because its entry is older than the revocation. So a memo hit never outlives a revocation this node
 * has heard of, whatever the interleaving.
 */
export interface MemoEntry<V> {
  readonly value: V;
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
  readonly tags: readonly string[];
  readonly seq: number;
  /** Hit since it was stored or last spared from eviction: spared once more (see `set`). */
  used: boolean;
}

/**
 * Eviction is second-chance (CLOCK) rather than exact least-recently-used: a hit only marks its entry, and the
 * eviction that meets a marked entry moves it to the recent end instead. A hit that re-inserted its entry (a Map
 * delete and insert, hashing a ~400-byte header twice) was the largest single cost of the heartbeat's memo lookup,
 * on every heartbeat of a fleet beating every 15 s. One eviction spares at most this many entries, so a memo full of
 * marked entries cannot make one insert walk all of them.
 */
const MAX_SPARED_PER_EVICTION = 32;

export class RevocableMemo<V> {
  private readonly entries = new Map<string, MemoEntry<V>>();
  /** tag → sequence number of its latest revocation. */
  private readonly revokedAt = new Map<string, number>();
  private seq = 0;

  constructor(private readonly maxEntries: number, private readonly maxRevokedTags: number) {}

  /** The sequence number a lookup starts at; pass it back to `set`. */
  begin(): number {
    return this.seq;
  }

  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // No revocation at all since the entry's lookup started (the common case) needs no tag lookups.
    if (entry.expiresAt <= now || (entry.seq !== this.seq && this.revokedSince(entry.tags, entry.seq))) {
      this.entries.delete(key);
      return undefined;
    }
    if (!entry.used) entry.used = true;
    return entry.value;
  }

  set(key: string, value: V, expiresAt: number, tags: readonly string[], startedAt: number): void {
    if (this.revokedSince(tags, startedAt)) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt, tags, seq: startedAt, used: false });
    let spare = MAX_SPARED_PER_EVICTION;
    while (this.entries.size > this.maxEntries) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, MemoEntry<V>];
      this.entries.delete(oldestKey);
      if (oldest.used && spare-- > 0) {
        oldest.used = false;
        this.entries.set(oldestKey, oldest);
      }
    }
  }

  revoke(tags: readonly string[]): void {
    if (tags.length === 0) return;
    this.seq += 1;
    for (const tag of tags) {
      this.revokedAt.delete(tag);
      this.revokedAt.set(tag, this.seq);
    }
    const wanted = new Set(tags);
    for (const [key, entry] of this.entries) {
      if (entry.tags.some((t) => wanted.has(t))) this.entries.delete(key);
    }
    if (this.revokedAt.size > this.maxRevokedTags) {
      // Forgetting old revocations is only safe when nothing memoised could predate them: start afresh.
      this.revokedAt.clear();
      this.entries.clear();
    }
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private revokedSince(tags: readonly string[], seq: number): boolean {
    for (const tag of tags) {
      const at = this.revokedAt.get(tag);
      if (at !== undefined && at > seq) return true;
    }
    return false;
  }
}
