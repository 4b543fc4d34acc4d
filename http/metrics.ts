import { Counter, Gauge, type Registry } from 'prom-client';
import { LabelledHistogram } from '../ops/kernel/labelled-histogram.js';

export interface HttpMetrics {
  readonly duration: LabelledHistogram<'method' | 'route' | 'status'>;
  readonly inFlight: Gauge;
  readonly sseStreams: Gauge;
  readonly sseCutOff: Counter;
}

const byRegistry = new WeakMap<Registry, HttpMetrics>();

/**
 * The HTTP edge's metrics, created once per registry (several servers in one test process may share one).
 * `route` is the route pattern, never the concrete path, so label cardinality stays bounded by the route table.
 */
export function httpMetrics(registry: Registry): HttpMetrics {
  const existing = byRegistry.get(registry);
  if (existing) return existing;
  const metrics: HttpMetrics = {
    duration: new LabelledHistogram({
      name: 'troupe_http_request_duration_seconds',
      help: 'Time from request arrival to the end of the reply (first byte for event streams).',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    inFlight: new Gauge({
      name: 'troupe_http_requests_in_flight',
      help: 'Requests received and not yet answered.',
      registers: [registry],
    }),
    sseStreams: new Gauge({
      name: 'troupe_http_sse_streams',
      help: 'Open server-sent-event streams.',
      registers: [registry],
    }),
    sseCutOff: new Counter({
      name: 'troupe_http_sse_cut_off_total',
      help: 'Event streams closed because the client fell too far behind.',
      registers: [registry],
    }),
  };
  byRegistry.set(registry, metrics);
  return metrics;
}
