/**
 * In-process serialisation, enough because the worker is one process: `KeyedMutex` runs functions one at a time per
 * key, in the order they asked; `FreshRun` lets concurrent askers share one run that starts after all of them asked.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => { release = resolve; });
    const tail = before.then(() => mine);
    this.tails.set(key, tail);
    await before;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

/**
 * Ten sessions of one repository starting together need one fetch, not ten in a row; but a session must never be
 * given a fetch that began before it asked (it could miss the commit it was dispatched for). So a caller joins the
 * run that is queued and not yet started, whose result is at least as fresh as one of its own, else queues a new one
 * behind the running one. `variant` separates runs that are not interchangeable (a repository's URL changed).
 */
export class FreshRun {
  private readonly queued = new Map<string, { readonly variant: string; readonly done: Promise<void> }>();

  constructor(private readonly mutex: KeyedMutex) {}

  request(key: string, variant: string, fn: () => Promise<void>): Promise<void> {
    const waiting = this.queued.get(key);
    if (waiting !== undefined && waiting.variant === variant) return waiting.done;
    const entry = {
      variant,
      done: this.mutex.run(key, async () => {
        if (this.queued.get(key) === entry) this.queued.delete(key);
        await fn();
      }),
    };
    this.queued.set(key, entry);
    return entry.done;
  }
}
