import type { Knex } from 'knex';
import { TroupeError } from '../ops/kernel/errors.js';
import { isStorageUnavailable } from './storage-errors.js';

/**
 * Fails fast while Postgres is unreachable (issue 20: "Postgres stopped → writes answer 503 within 2 s").
 *
 * knex's pool (tarn) answers a failed connection attempt by rejecting one waiting query and trying again 200 ms
 * later; every other waiting query keeps waiting for its acquire timeout. With Postgres down at a few hundred
 * writes a second, queries piled up behind each other and were answered after seconds, or succeeded after the
 * restart: p99 19 s, then 6–9 s once the acquire timeout was 5 s.
 *
 * The breaker opens on the first failed connection attempt that says the server is unreachable (refused, reset,
 * terminated, "not yet accepting connections"): every query then waiting for a connection fails at once with
 * STORAGE_UNAVAILABLE (a 503 with Retry-After at the edge), and so does every new one, except one trial every
 * `trialIntervalMs` that goes to the pool as usual. The breaker closes when a connection is made again (the trial's,
 * or any other), so service returns within a trial interval of Postgres accepting connections.
 *
 * It also opens when `trip` is called: the query deadline (query-deadline.ts) calls it when a query goes unanswered
 * past its deadline while the server has answered nothing else either (a hung server, SIGSTOP; decision 0058). A hung
 * server keeps the pool's idle connections open, so while the breaker is open a trial proves itself with a round
 * trip (`probe`) before the breaker closes: a connection that was merely handed out proves nothing.
 *
 * Nothing here decides whether a write happened: a query fails before it has a connection, so it never reached
 * Postgres. A query already running when the server went away fails with its own connection, as before.
 */
export interface BreakerOptions {
  /** How often, while open, one acquisition is let through to test the database. @default 250 */
  readonly trialIntervalMs?: number;
  /** How long a trial may wait for its connection before it counts as failed. @default 2000 */
  readonly trialTimeoutMs?: number;
  /**
   * A trial's round trip on the connection it got (`select 1`), bounded by the caller (the query deadline); it rejects
   * when the server does not answer. Without it a trial that gets a connection closes the breaker.
   */
  readonly probe?: (connection: unknown) => Promise<unknown>;
  /** Whether the server answered a query on an open connection just now (query-deadline.ts's `answeringNow`). */
  readonly serverAnswering?: () => boolean;
  /** Told when the breaker opens and closes (the node logs it). */
  readonly onChange?: (open: boolean, reason: string | undefined) => void;
}

interface PoolEvents {
  on(event: 'createFail', listener: (eventId: number, err: unknown) => void): void;
  on(event: 'createSuccess', listener: (eventId: number, resource: unknown) => void): void;
}

interface AcquiringClient {
  pool?: PoolEvents;
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
}

/** Seconds a refused caller is told to wait (Retry-After). */
export const STORAGE_RETRY_AFTER_SECONDS = 1;

export class ConnectionBreaker {
  private openSince: number | undefined;
  private reason: string | undefined;
  private lastTrial = 0;
  private trialRunning = false;
  /** Acquisitions waiting on the pool; each fails at once when the breaker opens. */
  private readonly waiting = new Set<(err: TroupeError) => void>();
  private readonly trialIntervalMs: number;
  private readonly trialTimeoutMs: number;

  private constructor(private readonly client: AcquiringClient, private readonly options: BreakerOptions) {
    this.trialIntervalMs = options.trialIntervalMs ?? 250;
    this.trialTimeoutMs = options.trialTimeoutMs ?? 2_000;
  }

  /** Puts a breaker in front of a Postgres knex's pool; returns it for inspection (tests, metrics). */
  static install(knex: Knex, options: BreakerOptions = {}): ConnectionBreaker {
    // knex types its client as `any`; these are the internals of it the breaker wraps.
    const client = knex.client as AcquiringClient;
    const breaker = new ConnectionBreaker(client, options);
    const acquire = client.acquireConnection.bind(client);
    client.acquireConnection = () => breaker.acquire(acquire);
    client.pool?.on('createFail', (_id, err) => {
      if (!isStorageUnavailable(err)) return;
      // A new connection that timed out while the server answers queries on the others is a busy machine (a server
      // forking a backend on two loaded cores can take seconds), not an outage: opening would refuse every request
      // that the working connections could serve (decision 0058). Refused, reset or "starting up" still opens.
      if (isTimeout(err) && options.serverAnswering?.() === true) return;
      breaker.open((err as Error).message);
    });
    client.pool?.on('createSuccess', () => breaker.close());
    return breaker;
  }

  get isOpen(): boolean {
    return this.openSince !== undefined;
  }

  private refusal(): TroupeError {
    return new TroupeError('STORAGE_UNAVAILABLE', undefined, { cause: this.reason, retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS });
  }

  /** Opens the breaker from outside the pool: the server stopped answering queries on connections it already had. */
  trip(reason: string): void {
    this.open(reason);
  }

  private open(reason: string): void {
    this.reason = reason;
    if (this.openSince === undefined) {
      this.openSince = Date.now();
      // The failed attempt was itself a trial: the next one waits its interval.
      this.lastTrial = Date.now();
      this.options.onChange?.(true, reason);
    }
    const refusal = this.refusal();
    for (const fail of [...this.waiting]) fail(refusal);
  }

  private close(): void {
    if (this.openSince === undefined) return;
    this.openSince = undefined;
    this.reason = undefined;
    this.options.onChange?.(false, undefined);
  }

  private async acquire(acquire: () => Promise<unknown>): Promise<unknown> {
    if (this.openSince === undefined) return this.waitFor(acquire());
    const now = Date.now();
    if (this.trialRunning || now - this.lastTrial < this.trialIntervalMs) throw this.refusal();
    this.lastTrial = now;
    this.trialRunning = true;
    try {
      const connection = await this.waitFor(acquire(), this.trialTimeoutMs);
      if (this.options.probe !== undefined) {
        try {
          await this.options.probe(connection);
        } catch (err) {
          // The probe's own deadline has disposed of a connection the server left unanswered; the pool drops it.
          await this.client.releaseConnection(connection).catch(() => undefined);
          this.reason = err instanceof Error ? err.message : String(err);
          throw this.refusal();
        }
      }
      this.close();
      return connection;
    } finally {
      this.trialRunning = false;
    }
  }

  /**
   * The pool's acquisition, unless the breaker opens (or `timeoutMs` passes) first. The pool keeps the abandoned
   * acquisition; if it is served later, its connection goes straight back.
   */
  private waitFor(pending: Promise<unknown>, timeoutMs?: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const fail = (err: TroupeError) => {
        if (settled) return;
        settled = true;
        this.waiting.delete(fail);
        clearTimeout(timer);
        reject(err);
        pending.then((connection) => this.client.releaseConnection(connection), () => undefined).catch(() => undefined);
      };
      this.waiting.add(fail);
      if (timeoutMs !== undefined) timer = setTimeout(() => fail(this.refusal()), timeoutMs);
      pending.then((connection) => {
        if (settled) return;
        settled = true;
        this.waiting.delete(fail);
        clearTimeout(timer);
        resolve(connection);
      }, (err: unknown) => {
        if (settled) return;
        settled = true;
        this.waiting.delete(fail);
        clearTimeout(timer);
        reject(err);
      });
    });
  }
}

/** pg's connection timeout and knex's pool timeout: the server may be merely slow to take a new connection. */
function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'KnexTimeoutError' || /^timeout expired$|timeout exceeded when trying to connect/i.test(err.message));
}
