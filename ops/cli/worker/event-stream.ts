import type { WorkerApi } from './api.js';
import { sleep, type Backoff } from './backoff.js';
import type { WorkerIdentity } from './identity.js';
import type { Lifetime } from './lifetime.js';
import type { WorkerLog } from './log.js';
import { readEvents } from './sse.js';

/** A stream silent (not even a keep-alive) for this long is taken as lost. */
const STREAM_IDLE_MS = 45_000;

/** What one server event stream is: where it is, where it resumes, and what its events do. */
export interface StreamSpec {
  readonly path: '/api/daemon/events' | '/api/daemon/credentials/stream';
  /** The `Last-Event-ID` to resume after, if the stream resumes. */
  resumeFrom?(): string | undefined;
  /** `requestedAt`: the local time this connection was asked for. */
  onEvent(event: string, data: unknown, lastEventId: string | undefined, requestedAt: number): void;
  /** An error this stream handles itself; true when it did (nothing more is logged). */
  handleError?(err: unknown): boolean;
}

export interface EventStreamDeps {
  readonly api: WorkerApi;
  readonly identity: WorkerIdentity;
  readonly lifetime: Lifetime;
  readonly log: WorkerLog;
  readonly newBackoff: () => Backoff;
}

/**
 * A server event stream held open for as long as the worker runs: a lost connection is opened again after a backoff
 * (reset by each `ready`), a deliberate reconnect (a new token names other projects) at once.
 */
export class EventStream {
  private connection: AbortController | undefined;

  constructor(private readonly spec: StreamSpec, private readonly deps: EventStreamDeps) {}

  /** Drops the connection: unless the worker is stopping, a new one is opened at once, with the token as it is now. */
  dropConnection(): void {
    this.connection?.abort();
  }

  async run(): Promise<void> {
    const { api, identity, lifetime, log } = this.deps;
    const { spec } = this;
    const backoff = this.deps.newBackoff();
    while (!lifetime.stopping) {
      const abort = new AbortController();
      this.connection = abort;
      const requestedAt = Date.now();
      try {
        const signal = AbortSignal.any([abort.signal, lifetime.endedSignal]);
        const res = await api.stream(identity.token, spec.path, signal, spec.resumeFrom?.());
        await readEvents(res.body!, (event, data, lastEventId) => {
          if (event === 'ready') backoff.reset();
          spec.onEvent(event, data, lastEventId, requestedAt);
        }, STREAM_IDLE_MS, signal);
      } catch (err) {
        if (lifetime.stopping) return;
        if (!spec.handleError?.(err) && !abort.signal.aborted) log('debug', 'stream.lost', `${spec.path}: ${(err as Error).message}`);
      }
      if (lifetime.stopping) return;
      // A deliberate reconnect (new token) is immediate; a lost stream backs off.
      if (!abort.signal.aborted) await sleep(backoff.next(), lifetime.endedSignal);
    }
  }
}
