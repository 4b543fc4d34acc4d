import { Counter, Histogram } from 'prom-client';
import { registeredMetric } from '../../../ops/kernel/registered-metric.js';
import type { Deps } from '../deps.js';
import type { Logger } from '../../../ops/kernel/logger.js';
import type { SigningKeys } from '../identity/tokens.js';
import type { NodeService } from '../node-service.js';
import { dbKind } from '../../../storage/db.js';
import { writeLiveness } from '../../../storage/sessions/daemon.js';
import { PendingIndex } from './pending-index.js';
import { writeStepHeartbeats } from '../../../storage/sessions/queries.js';
import { createLeaseSweeper } from './lease-sweeper.js';
import { createPendingSync } from './pending-sync.js';

/**
 * The per-node, in-memory side of the daemon protocol (decision 0007): what keeps the heartbeat off the actors
 * and off the database.
 *
 * - Liveness and step heartbeats are loss-tolerant, high-rate facts (DESIGN rule 2): each request only writes a
 *   map entry; a flusher writes the latest value per key in one sorted batch statement every `flushMs`.
 * - The pending-mutation index (./pending-index.ts) says, per worker, whether a heartbeat must ask its daemon-host
 *   actor. It is kept exact by the actor's `daemon.pending` announcements and reconciled from the read model every
 *   `recheckMs` (jittered, one query per node), which bounds how late a mutation can be if a node missed an event
 *   (./pending-sync.ts).
 * - The lease sweeper (./lease-sweeper.ts) returns sessions of silent workers to the queue (or fails them) through
 *   their actors.
 */
export { PENDING_TOPIC, PendingIndex } from './pending-index.js';

export interface DaemonServicesOptions {
  /** @default 1000 */
  readonly flushMs?: number;
  /**
   * Mean interval between reconciliations of the pending index with the read model (each one grouped query, at a
   * random point between 0.5× and 1.5× this, so the nodes of a cluster do not query together). @default 30000
   */
  readonly recheckMs?: number;
  /** A held session whose worker has been silent this long is reclaimed. @default 90000 */
  readonly leaseMs?: number;
  /** Flush early when this many distinct keys are buffered. @default 50000 */
  readonly maxBuffered?: number;
  /**
   * A worker's liveness is written at most once per this many ms: a daemon heartbeating faster (a bug, a hostile
   * client, a benchmark) cannot make the node write faster. Far below the lease, so "live" and lease expiry are
   * unaffected. @default min(10000, lease / 9)
   */
  readonly livenessResolutionMs?: number;
}

/** Which recorded values a writer may skip: one per key per `ms`, measured by `timeOf`. */
export interface WriteResolution<V> {
  readonly ms: number;
  readonly timeOf: (value: V) => number;
}

/** Buffers the latest value per key and writes them in one batch; a failed batch is merged back under newer values. */
export class CoalescingWriter<V> {
  private buffer = new Map<string, V>();
  /** Per key, the time of the last value taken (only with a resolution). */
  private readonly taken = new Map<string, number>();
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly write: (batch: ReadonlyMap<string, V>) => Promise<void>,
    private readonly opts: {
      flushMs: number; maxBuffered: number; log: Logger; what: string; batchSize: Histogram<string>; failures: Counter<string>;
      resolution?: WriteResolution<V>;
    },
  ) {}

  /** Flushes every `flushMs` from now on. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => { void this.flush(); }, this.opts.flushMs);
    this.timer.unref();
  }

  record(key: string, value: V): void {
    const resolution = this.opts.resolution;
    if (resolution !== undefined) {
      const at = resolution.timeOf(value);
      const last = this.taken.get(key);
      // Within the resolution of the last value taken: nothing a reader could tell apart, so not written again.
      if (last !== undefined && at >= last && at - last < resolution.ms) return;
      if (last === undefined && this.taken.size >= this.opts.maxBuffered * 4) this.taken.clear();
      this.taken.set(key, at);
    }
    this.buffer.set(key, value);
    if (this.buffer.size >= this.opts.maxBuffered) void this.flush();
  }

  get(key: string): V | undefined {
    return this.buffer.get(key);
  }

  /** Keys buffered and not yet written. */
  size(): number {
    return this.buffer.size;
  }

  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.buffer.size === 0) return Promise.resolve();
    const batch = this.buffer;
    this.buffer = new Map();
    this.opts.batchSize.observe({ what: this.opts.what }, batch.size);
    this.flushing = this.write(batch)
      .catch((err: unknown) => {
        this.opts.failures.inc({ what: this.opts.what });
        this.opts.log.warn({ err, what: this.opts.what, size: batch.size }, 'batched write failed; will retry with the next batch');
        for (const [k, v] of batch) if (!this.buffer.has(k)) this.buffer.set(k, v);
      })
      .finally(() => { this.flushing = undefined; });
    return this.flushing;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** Recorded under `<orgId>/<sessionId>`: two orgs' sessions may share a public id (decision 0068). */
export interface StepBeat { readonly orgId: string; readonly sessionId: string; readonly workerId: string; readonly at: number }

export interface DaemonServices {
  readonly keys: SigningKeys;
  readonly liveness: CoalescingWriter<number>;
  readonly steps: CoalescingWriter<StepBeat>;
  readonly pending: PendingIndex;
  /** Step heartbeats answered `{ok: true}` without being recorded, by reason. */
  readonly stepHeartbeatsSwallowed: Counter<string>;
  readonly leaseMs: number;
  /** Sets a pending count this node learnt from the actor's reply (the actor announces it to every node). */
  notePending(workerId: string, pending: number): void;
  /** One sweep: reclaims sessions whose worker is silent for longer than the lease. Returns how many were told. */
  sweepLeases(): Promise<number>;
}

/** The node's daemon services (`deps.services.daemon`). */
export const daemonServices = (deps: Pick<Deps, 'services'>): DaemonServices => deps.services.daemon;

type DaemonDeps = Pick<Deps, 'config' | 'log' | 'clock' | 'db' | 'transport' | 'metrics' | 'ask'>;

/**
 * Builds the node's daemon services; nothing runs until the node starts them (the writers' flushes, the
 * `daemon.pending` subscription and the index's reconciliation, the lease sweeper) and `stop` writes what is still
 * buffered.
 */
export function createDaemonServices(deps: DaemonDeps, keys: SigningKeys, options: DaemonServicesOptions = {}): DaemonServices & NodeService {
  const log = deps.log.child({ component: 'daemon-services' });
  const leaseMs = options.leaseMs ?? deps.config.sessionLeaseMs;
  const metrics = daemonMetrics(deps.metrics);
  const { liveness, steps } = heartbeatWriters(deps, log, options, leaseMs, metrics);
  const pending = new PendingIndex();
  const pendingSync = createPendingSync(deps, log, pending, options.recheckMs ?? 30_000);
  const sweeper = createLeaseSweeper(deps, log, leaseMs, () => liveness.flush());

  return {
    name: 'daemon',
    keys, liveness, steps, pending, stepHeartbeatsSwallowed: metrics.stepHeartbeatsSwallowed, leaseMs,
    notePending(workerId, count) {
      pending.set(workerId, count);
    },
    sweepLeases: sweeper.sweep,
    // Started once the transport runs, so the first heartbeat finds the writers, the pending index and the lease
    // sweeper ready.
    start() {
      liveness.start();
      steps.start();
      pendingSync.start();
      sweeper.start();
    },
    // Stopped before the actor system, so liveness recorded by the last requests reaches the database.
    async stop() {
      pendingSync.stop();
      liveness.stop();
      steps.stop();
      sweeper.stop();
      // A sweep or flush under way finishes first; then the last buffered values are written. A failed final
      // write is logged (the writer counts it) and lost, as liveness is loss-tolerant by design.
      await liveness.flush();
      await steps.flush();
      if (liveness.size() > 0) await liveness.flush();
      if (steps.size() > 0) await steps.flush();
      await pendingSync.unsubscribe();
    },
  };
}

/** The writers' and step heartbeats' metrics, registered once per registry. */
function daemonMetrics(registry: DaemonDeps['metrics']) {
  return {
    batchSize: registeredMetric(registry, 'troupe_liveness_flush_batch_size', () => new Histogram({
      name: 'troupe_liveness_flush_batch_size', help: 'Keys written per batched liveness flush',
      labelNames: ['what'], buckets: [1, 10, 100, 1000, 10_000, 100_000], registers: [registry],
    })),
    failures: registeredMetric(registry, 'troupe_liveness_flush_failures_total', () => new Counter({
      name: 'troupe_liveness_flush_failures_total', help: 'Batched liveness flushes that failed (retried with the next batch)',
      labelNames: ['what'], registers: [registry],
    })),
    stepHeartbeatsSwallowed: registeredMetric(registry, 'troupe_step_heartbeats_swallowed_total', () => new Counter({
      name: 'troupe_step_heartbeats_swallowed_total', help: 'Step heartbeats answered ok without being recorded, by reason',
      labelNames: ['reason'], registers: [registry],
    })),
  };
}

/** The coalescing writers of worker liveness and step heartbeats (decision 0007). */
function heartbeatWriters(
  deps: DaemonDeps, log: Logger, options: DaemonServicesOptions, leaseMs: number, { batchSize, failures }: ReturnType<typeof daemonMetrics>,
) {
  const flushMs = options.flushMs ?? 1000;
  const maxBuffered = options.maxBuffered ?? 50_000;
  // Benchmark G3 only (ops/bench/heartbeat.ts): measures the heartbeat with storage writes taken away, to show
  // they are off the request path. Loud, because a node running with it loses every liveness write.
  const noopWriter = process.env.TROUPE_BENCH_NOOP_STORAGE_WRITER === '1';
  if (noopWriter) log.warn('TROUPE_BENCH_NOOP_STORAGE_WRITER=1: liveness and step heartbeats are NOT written (benchmark only)');
  const livenessResolutionMs = options.livenessResolutionMs ?? Math.min(10_000, Math.floor(leaseMs / 9));
  // PGlite runs each statement on the event loop's thread: small chunks with a yield between them keep a flush
  // from stalling requests (measured here with the index plan, decision 0059: 100 rows ≈ 2.5 ms, 200 ≈ 5 ms, against a
  // ceiling p99 of a few ms). On Postgres the statement runs elsewhere; chunks only bound how many rows one statement
  // holds locked.
  const livenessChunkRows = dbKind(deps.db) === 'pglite' ? 100 : 5000;
  const liveness = new CoalescingWriter<number>(noopWriter ? async () => {} : (batch) => writeLiveness(deps.db, batch, { chunkRows: livenessChunkRows }), {
    flushMs, maxBuffered, log, what: 'worker', batchSize, failures, resolution: { ms: livenessResolutionMs, timeOf: (at) => at },
  });
  const steps = new CoalescingWriter<StepBeat>(
    noopWriter ? async () => {} : (batch) => writeStepHeartbeats(deps.db, [...batch.values()]),
    { flushMs, maxBuffered, log, what: 'step', batchSize, failures },
  );
  return { liveness, steps };
}
