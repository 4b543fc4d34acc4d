import { ApiError, type Mutation, type WorkerApi } from './api.js';
import { sleep, type Backoff } from './backoff.js';
import type { ServerConnection } from './connection.js';
import type { WorkerIdentity } from './identity.js';
import type { Lifetime } from './lifetime.js';
import type { WorkerLog } from './log.js';
import type { SessionTable } from './session-table.js';

export interface HeartbeatDeps {
  readonly api: WorkerApi;
  readonly identity: WorkerIdentity;
  readonly table: SessionTable;
  readonly connection: ServerConnection;
  readonly lifetime: Lifetime;
  readonly log: WorkerLog;
  readonly newBackoff: () => Backoff;
  readonly applyMutation: (m: Mutation) => void;
  /** The server refused the runtime token (401): the worker registers again. */
  readonly tokenRefused: () => Promise<void>;
  /** The worker cannot go on (registering again failed for good). */
  readonly fatal: (err: unknown) => void;
}

/**
 * The heartbeat: tells the server which sessions run and how loaded the worker is, takes a renewed token and the
 * mutations queued for it, and is the probe that finds the server back after an outage (backing off meanwhile).
 */
export class Heartbeat {
  private wakeUp = new AbortController();

  constructor(private readonly deps: HeartbeatDeps) {}

  /** Beats now rather than after the interval: a mutation waits, or the server stopped answering. */
  wake(): void {
    this.wakeUp.abort();
  }

  async run(): Promise<void> {
    const { lifetime } = this.deps;
    const backoff = this.deps.newBackoff();
    while (!lifetime.stopping) {
      let wait: number;
      try {
        wait = await this.beat(backoff);
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) {
          try {
            await this.deps.tokenRefused();
          } catch (e) {
            this.deps.fatal(e);
            return;
          }
          continue;
        }
        this.deps.connection.down(err);
        wait = backoff.next();
        this.deps.log('debug', 'heartbeat.failed', `heartbeat failed: ${(err as Error).message}; next try in ${wait} ms`);
      }
      this.wakeUp = new AbortController();
      await sleep(wait, AbortSignal.any([this.wakeUp.signal, lifetime.endedSignal]));
    }
  }

  /** One heartbeat; the wait before the next. */
  private async beat(backoff: Backoff): Promise<number> {
    const { api, identity, table } = this.deps;
    const reply = await api.heartbeat(identity.token, {
      workerId: identity.workerId, activeSessionIds: [...table.running.keys()], load: table.load(),
    });
    backoff.reset();
    this.deps.connection.up();
    if (typeof reply.runtimeJwt === 'string' && reply.runtimeJwt !== '') identity.renewToken(reply.runtimeJwt);
    for (const m of Array.isArray(reply.mutations) ? reply.mutations : []) if (typeof m === 'object' && m !== null) this.deps.applyMutation(m);
    return identity.current!.heartbeatIntervalSeconds * 1000;
  }
}
