import { systemClock, type Clock } from '../ops/kernel/clock.js';
import { TroupeError } from '../ops/kernel/errors.js';
import type { Cache } from './cache.js';

/**
 * The in-process Cache for a single node on embedded defaults. Expiry reads the injected clock, so tests move
 * time instead of waiting. The number of entries is capped: when full, expired entries go first and then the
 * least recently used, so hostile traffic (one nonce per request, say) cannot grow memory without bound. An
 * eviction is a loss the Cache port allows; a replay window therefore holds only while the cache is not flooded
 * past `maxEntries`, which is why the cap is generous.
 */
export interface MemoryCacheOptions {
  clock?: Clock;
  /** @default 100000 */
  maxEntries?: number;
}

interface Entry {
  value: string;
  /** Epoch ms, or undefined for no expiry. */
  expiresAt: number | undefined;
}

export class MemoryCache implements Cache {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: Clock;
  private readonly maxEntries: number;
  private closed = false;

  constructor(opts: MemoryCacheOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.maxEntries = opts.maxEntries ?? 100_000;
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1) throw new TroupeError('INTERNAL', 'maxEntries must be a positive integer');
  }

  /** How many entries are held, expired ones included until they are touched or evicted. */
  get size(): number {
    return this.entries.size;
  }

  async get(key: string): Promise<string | undefined> {
    this.checkOpen();
    return this.live(key)?.value;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    this.checkOpen();
    this.store(key, { value, expiresAt: ttlMs === undefined ? undefined : this.clock.now() + checkTtl(ttlMs) });
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    this.checkOpen();
    const expiresAt = this.clock.now() + checkTtl(ttlMs);
    if (this.live(key)) return false;
    this.store(key, { value, expiresAt });
    return true;
  }

  async increment(key: string, ttlMs: number): Promise<number> {
    this.checkOpen();
    const ttl = checkTtl(ttlMs);
    const current = this.live(key);
    if (!current) {
      this.store(key, { value: '1', expiresAt: this.clock.now() + ttl });
      return 1;
    }
    // Like Redis INCR: an existing counter keeps its expiry, and a value that is not an integer is a misuse.
    if (!/^-?\d{1,16}$/.test(current.value)) throw new TroupeError('INTERNAL', 'cache value is not an integer');
    const next = Number(current.value) + 1;
    current.value = String(next);
    return next;
  }

  async delete(key: string): Promise<void> {
    this.checkOpen();
    this.entries.delete(key);
  }

  async ping(): Promise<boolean> {
    return !this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.entries.clear();
  }

  /** The entry if present and unexpired, marked most recently used. */
  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt <= this.clock.now()) {
      this.entries.delete(key);
      return undefined;
    }
    // Map keeps insertion order; re-inserting moves the key to the most-recently-used end.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  private store(key: string, entry: Entry): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.evict();
    this.entries.set(key, entry);
  }

  /**
   * Makes room for one entry. Scans at most a bounded number of the oldest entries for an expired one (so an
   * insert never costs a full pass), otherwise drops the least recently used.
   */
  private evict(): void {
    const now = this.clock.now();
    let scanned = 0;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt !== undefined && entry.expiresAt <= now) {
        this.entries.delete(key);
        return;
      }
      if (++scanned >= EVICTION_SCAN) break;
    }
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }

  private checkOpen(): void {
    if (this.closed) throw new TroupeError('CACHE_UNAVAILABLE', 'cache is closed');
  }
}

/** How many of the least recently used entries an insert into a full cache looks at for an expired one. */
const EVICTION_SCAN = 32;

function checkTtl(ttlMs: number): number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new TroupeError('INTERNAL', `cache ttlMs must be a positive number, got ${String(ttlMs)}`);
  }
  return Math.ceil(ttlMs);
}
