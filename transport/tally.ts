import { ChurnMap } from '../ops/kernel/churn-map.js';

/** Counts per key; a key is present only while its count is above zero. */
export class Tally<K> {
  private readonly counts = new ChurnMap<K, number>();

  add(key: K): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** Counts one off and answers what is left; a key not counted stays at zero. */
  remove(key: K): number {
    const left = (this.counts.get(key) ?? 0) - 1;
    if (left > 0) this.counts.set(key, left);
    else this.counts.delete(key);
    return Math.max(left, 0);
  }

  get(key: K): number {
    return this.counts.get(key) ?? 0;
  }

  has(key: K): boolean {
    return this.counts.has(key);
  }
}
