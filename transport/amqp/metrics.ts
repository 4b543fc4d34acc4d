import { Counter, Gauge, type Registry } from 'prom-client';
import { LabelledHistogram, type HistogramSeries } from '../../ops/kernel/labelled-histogram.js';

/** Transport metrics for `/metrics`; absent when the caller passes no registry (tests, tools). */
export interface TransportMetrics {
  readonly asks: Counter<'outcome'>;
  /** Observed on every ask: a LabelledHistogram series, not prom-client's Histogram (ops/kernel/labelled-histogram.ts). */
  readonly askSeconds: HistogramSeries;
  readonly deliveries: Counter<'outcome'>;
  readonly connected: Gauge;
  /** Events dropped from this node's full event queue before it handled them (events-lost.ts). */
  readonly eventsLost: Counter;
  /** Connections dropped because the broker stopped answering on them (broker-liveness.ts). */
  readonly brokerHung: Counter;
  /** Asks that skipped the broker because this node held the address's shard (shortcut.ts). */
  readonly inProcessAsks: Counter;
  /** Broker messages that carried asks, one or a batch (ask-batch.ts); asks ÷ this is the batching factor. */
  readonly askMessages: Counter;
  /** Asks sent straight to the inbox of the node holding their shard (owner-routes.ts). */
  readonly routedAsks: Counter;
  /** Routed asks this node passed on to their shard queue: it no longer held the shard, or the handler crashed. */
  readonly forwardedAsks: Counter;
  /** Routed asks sent again through their shard queue because the holder's inbox went away. */
  readonly reroutedAsks: Counter;
  /** `asks.inc({outcome})` through a child bound once per outcome: no labels object per ask (prom-client still hashes them). */
  readonly countAsk: (outcome: string) => void;
  /** Same for `deliveries`. */
  readonly countDelivery: (outcome: string) => void;
}

/** Outcomes are a small closed set (ok, rejected, error codes), so the cache stays small. */
function boundByOutcome(counter: Counter<'outcome'>): (outcome: string) => void {
  const children = new Map<string, { inc(): void }>();
  return (outcome) => {
    let child = children.get(outcome);
    if (!child) children.set(outcome, (child = counter.labels(outcome)));
    child.inc();
  };
}

function existing<T>(registry: Registry, name: string): T | undefined {
  return registry.getSingleMetric(name) as T | undefined;
}

/** Reuses metrics already in the registry so two transports in one process (tests) can share it. */
export function transportMetrics(registry: Registry): TransportMetrics {
  const registers = [registry];
  const counter = (name: string, help: string) => existing<Counter>(registry, name) ?? new Counter({ name, help, registers });
  const byOutcome = (name: string, help: string) =>
    existing<Counter<'outcome'>>(registry, name) ?? new Counter({ name, help, labelNames: ['outcome'], registers });
  const metrics = {
    asks: byOutcome('troupe_transport_asks_total', 'Asks sent, by outcome'),
    askSeconds: (
      existing<LabelledHistogram<never>>(registry, 'troupe_transport_ask_seconds') ??
      new LabelledHistogram<never>({
        name: 'troupe_transport_ask_seconds',
        help: 'Ask round trip, from publish to reply',
        labelNames: [],
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
        registers,
      })
    ).labels({}),
    deliveries: byOutcome('troupe_transport_deliveries_total', 'Shard deliveries handled, by outcome'),
    connected:
      existing<Gauge>(registry, 'troupe_transport_connected') ??
      new Gauge({ name: 'troupe_transport_connected', help: '1 while the broker connection is up', registers }),
    eventsLost: counter('troupe_transport_events_lost_total', "Events dropped from this node's full event queue before it handled them"),
    brokerHung: counter('troupe_transport_broker_hung_total', 'Broker connections dropped because the broker stopped answering on them'),
    inProcessAsks: counter('troupe_transport_in_process_asks_total', 'Asks answered in-process because this node held the shard'),
    askMessages: counter('troupe_transport_ask_messages_total', 'Broker messages that carried asks (several asks to one shard or holder share one)'),
    routedAsks: counter('troupe_transport_routed_asks_total', 'Asks sent straight to the inbox of the node holding their shard'),
    forwardedAsks: counter(
      'troupe_transport_forwarded_asks_total', 'Routed asks passed on to their shard queue (shard no longer held here, or the handler crashed)',
    ),
    reroutedAsks: counter('troupe_transport_rerouted_asks_total', "Routed asks sent again through their shard queue because the holder's inbox went away"),
  };
  return { ...metrics, countAsk: boundByOutcome(metrics.asks), countDelivery: boundByOutcome(metrics.deliveries) };
}
