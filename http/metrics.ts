import { Counter, Gauge, type Registry } from 'prom-client';
import { LabelledHistogram } from '../ops/kernel/labelled-histogram.js';
import { registeredMetric } from '../ops/kernel/registered-metric.js';

export interface HttpMetrics {
  readonly duration: LabelledHistogram<'method' | 'route' | 'status'>;
  readonly sseStreams: Gauge;
  readonly sseCutOff: Counter;
  /** Event streams refused because their org held TROUPE_STREAMS_PER_ORG on this node. */
  readonly sseRefused: Counter;
  readonly shed: Counter<'reason'>;
  /** Reports a server's admission gate in `troupe_http_admission` at each scrape. */
  watchAdmission(read: () => { serving: number; waiting: number }): () => void;
  /** Reports a server's requests in flight in `troupe_http_requests_in_flight` at each scrape. */
  watchInFlight(read: () => number): () => void;
  /** Reports how close orgs are to TROUPE_STREAMS_PER_ORG in `troupe_http_sse_org_streams` at each scrape. */
  watchOrgStreams(read: () => OrgStreamReading): () => void;
}

/** The org holding the most streams, and how many orgs hold their whole share. */
export interface OrgStreamReading { readonly busiest: number; readonly atLimit: number }

type AdmissionReader = () => { serving: number; waiting: number };

/**
 * The HTTP edge's metrics, registered once per registry and found there again (several servers in one test process
 * may share one). `route` is the route pattern, never the concrete path, so label cardinality stays bounded by the
 * route table.
 */
export function httpMetrics(registry: Registry): HttpMetrics {
  const admission = registeredMetric(registry, 'troupe_http_admission', () => {
    const readers = new Set<AdmissionReader>();
    const gauge = new Gauge<'state'>({
      name: 'troupe_http_admission',
      help: 'Write requests inside the admission gate: being served, or waiting for a slot (decision 0053).',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        let serving = 0;
        let waiting = 0;
        for (const read of readers) {
          const now = read();
          serving += now.serving;
          waiting += now.waiting;
        }
        this.set({ state: 'serving' }, serving);
        this.set({ state: 'waiting' }, waiting);
      },
    });
    return Object.assign(gauge, { readers });
  });
  // Read at each scrape rather than counted per request: an increment and a decrement per heartbeat cost more
  // than every scrape together.
  const inFlight = registeredMetric(registry, 'troupe_http_requests_in_flight', () => {
    const readers = new Set<() => number>();
    const gauge = new Gauge({
      name: 'troupe_http_requests_in_flight',
      help: 'Requests received and not yet answered.',
      registers: [registry],
      collect() {
        let total = 0;
        for (const read of readers) total += read();
        this.set(total);
      },
    });
    return Object.assign(gauge, { readers });
  });
  const orgStreams = orgStreamsGauge(registry);
  return {
    duration: registeredMetric(registry, 'troupe_http_request_duration_seconds', () => new LabelledHistogram<'method' | 'route' | 'status'>({
      name: 'troupe_http_request_duration_seconds',
      help: 'Time from request arrival to the end of the reply (first byte for event streams).',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    })),
    sseStreams: registeredMetric(registry, 'troupe_http_sse_streams', () => new Gauge({
      name: 'troupe_http_sse_streams',
      help: 'Open server-sent-event streams.',
      registers: [registry],
    })),
    sseCutOff: registeredMetric(registry, 'troupe_http_sse_cut_off_total', () => new Counter({
      name: 'troupe_http_sse_cut_off_total',
      help: 'Event streams closed because the client fell too far behind.',
      registers: [registry],
    })),
    sseRefused: registeredMetric(registry, 'troupe_http_sse_streams_refused_total', () => new Counter({
      name: 'troupe_http_sse_streams_refused_total',
      help: 'Event streams refused with TOO_MANY_STREAMS: their org had TROUPE_STREAMS_PER_ORG open on this node (decision 0082).',
      registers: [registry],
    })),
    shed: registeredMetric(registry, 'troupe_http_shed_total', () => new Counter<'reason'>({
      name: 'troupe_http_shed_total',
      help: 'Write requests refused with OVERLOADED by the admission gate, by reason (queue_full, waited_too_long).',
      labelNames: ['reason'],
      registers: [registry],
    })),
    watchAdmission: (read) => {
      admission.readers.add(read);
      return () => admission.readers.delete(read);
    },
    watchInFlight: (read) => {
      inFlight.readers.add(read);
      return () => inFlight.readers.delete(read);
    },
    watchOrgStreams: (read) => {
      orgStreams.readers.add(read);
      return () => orgStreams.readers.delete(read);
    },
  };
}

/**
 * `troupe_http_sse_org_streams`: not one series per org (unbounded label cardinality): the busiest org's count against
 * the limit says whether any tenant is near its share, and how many hold all of it says whether refusals are one
 * tenant's or many.
 */
function orgStreamsGauge(registry: Registry) {
  return registeredMetric(registry, 'troupe_http_sse_org_streams', () => {
    const readers = new Set<() => OrgStreamReading>();
    const gauge = new Gauge<'measure'>({
      name: 'troupe_http_sse_org_streams',
      help: 'Per-org event streams on this node: busiest = the most one org holds, at_limit = orgs holding TROUPE_STREAMS_PER_ORG (decision 0082).',
      labelNames: ['measure'],
      registers: [registry],
      collect() {
        let busiest = 0;
        let atLimit = 0;
        for (const read of readers) {
          const now = read();
          busiest = Math.max(busiest, now.busiest);
          atLimit += now.atLimit;
        }
        this.set({ measure: 'busiest' }, busiest);
        this.set({ measure: 'at_limit' }, atLimit);
      },
    });
    return Object.assign(gauge, { readers });
  });
}
