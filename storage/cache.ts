/**
 * The cache port: short-lived, loss-tolerant facts (nonce replay windows, verified-credential memos, rate
 * counters). Nothing a caller was told happened may live only here. Every call fails fast with
 * `TroupeError('CACHE_UNAVAILABLE')` when the backing server is down; callers decide whether that is fatal.
 */
export interface Cache {
  get(key: string): Promise<string | undefined>;
  /** ttlMs undefined: no expiry. */
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  /** Sets only when the key is absent (Redis SET NX PX); true when this call set it. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Atomically increments an integer counter, creating it with the expiry when absent; returns the new value. */
  increment(key: string, ttlMs: number): Promise<number>;
  delete(key: string): Promise<void>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
