/**
 * Where the worker is in its life, read by every part that could start something new: draining (SIGTERM: no new
 * work, running sessions may finish), stopping (the loops end), then ended (`run()` returns).
 */
export class Lifetime {
  draining = false;
  stopping = false;
  private readonly ended = new AbortController();

  /** Aborted once the worker has ended: wakes every sleep that waits out a retry. */
  get endedSignal(): AbortSignal {
    return this.ended.signal;
  }

  end(): void {
    this.ended.abort();
  }

  whenEnded(): Promise<void> {
    return new Promise<void>((resolve) => this.ended.signal.addEventListener('abort', () => resolve(), { once: true }));
  }
}
