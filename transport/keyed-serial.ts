import { ChurnMap, ChurnSet } from '../ops/kernel/churn-map.js';

/**
 * Runs tasks one at a time per key and concurrently across keys. The transports deliver through it so that messages
 * to one actor address are handled in the order they arrived (an actor's mailbox order), while different actors on
 * the same shard proceed in parallel. A handler that asks its own address waits behind itself until its deadline:
 * actors must not ask themselves.
 */
export class KeyedSerial {
  private readonly tails = new ChurnMap<string, Promise<unknown>>();
  private readonly running = new ChurnSet<Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    // The chain continues whatever the task's outcome; the caller sees the outcome through `result`.
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    this.running.add(tail);
    void tail.then(() => {
      this.running.delete(tail);
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Number of keys with queued or running work. */
  get activeKeys(): number {
    return this.tails.size;
  }

  /** Resolves when every task accepted so far (and any queued behind it) has settled. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }
}
