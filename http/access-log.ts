import { performance } from 'node:perf_hooks';
import type { Logger } from '../ops/kernel/logger.js';
import type { CopiedRequest } from './exchange.js';
import type { HttpMetrics } from './metrics.js';

/** Requests slower than this are logged at info even when they succeed. */
const SLOW_REQUEST_SECONDS = 1;

interface DurationSeries { observe(seconds: number): void }

/** Each request's latency in `troupe_http_request_duration_seconds`, and its line in the log. */
export class AccessLog {
  /**
   * The duration histogram's child per (method, route, status), looked up once: resolving labels on every
   * observation (hashing a label object) costs more than the rest of the access log. Bounded by the route table
   * times the statuses it answers. Nested by pattern, method, status: a lookup allocates no key string.
   */
  private readonly durations = new Map<string, Map<string, Map<number, DurationSeries>>>();

  constructor(private readonly log: Logger, private readonly duration: HttpMetrics['duration']) {}

  /**
   * One line per request. Headers are never logged, so neither is Authorization or Cookie. A fast success is logged
   * at debug: at heartbeat rates an info line per request would cost more than the request itself, and the latency
   * histogram already counts it. Refusals and slow requests are what an operator reads, so they stay at info (503s
   * aside, see below).
   */
  record(copied: CopiedRequest, pattern: string, status: number, started: number): void {
    const seconds = (performance.now() - started) / 1000;
    this.durationOf(copied.method, pattern, status).observe(seconds);
    // A 503 is a dependency's outage or this node's overload, where it comes for every request: the refusal's own
    // warning (http/errors.ts, one per kind and window) and the histogram say it without a line each.
    const level = (status >= 400 && status !== 503) || seconds >= SLOW_REQUEST_SECONDS ? 'info' : 'debug';
    if (!this.log.isLevelEnabled(level)) return;
    this.log[level]({ reqId: copied.requestId, method: copied.method, route: pattern, status, ms: Math.round(seconds * 10_000) / 10 }, 'http request');
  }

  /** The latency alone, for requests that are counted but not logged one by one (refused by the admission gate). */
  observe(method: string, pattern: string, status: number, started: number): void {
    this.durationOf(method, pattern, status).observe((performance.now() - started) / 1000);
  }

  private durationOf(method: string, pattern: string, status: number): DurationSeries {
    let byMethod = this.durations.get(pattern);
    if (byMethod === undefined) this.durations.set(pattern, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (child === undefined) byStatus.set(status, (child = this.duration.labels({ method, route: pattern, status: String(status) })));
    return child;
  }
}

/** The fields a refusal's log line carries to find its request. */
export function logContext(copied: CopiedRequest, pattern: string): Record<string, unknown> {
  return { reqId: copied.requestId, method: copied.method, route: pattern };
}
