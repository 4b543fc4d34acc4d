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
  /** When the entry last moved to the recent end; recency is refreshed at most once per RECENCY_REFRESH_MS. */
  touchedAt: number;
}

/**
 * Moving an entry to the recent end costs a Map delete and insert, which on the heartbeat path was the largest
 * single cost of a memo hit. Entries hit often are refreshed at most this often; eviction order is then exact to
 * within this window, which is all a memo bounded by its size needs.
 */
const RECENCY_REFRESH_MS = 1_000;

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
    if (now - entry.touchedAt >= RECENCY_REFRESH_MS) {
      // Re-insert to mark as recently used (Map keeps insertion order).
      entry.touchedAt = now;
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry.value;
  }

  set(key: string, value: V, expiresAt: number, tags: readonly string[], startedAt: number): void {
    if (this.revokedSince(tags, startedAt)) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt, tags, seq: startedAt, touchedAt: Number.NEGATIVE_INFINITY });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
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
