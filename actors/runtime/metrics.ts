import { Counter, Gauge, type Registry } from 'prom-client';
import { LabelledHistogram, type HistogramSeries } from '../../ops/kernel/labelled-histogram.js';

/** How a message ended, for `troupe_actor_messages_total`. */
export type MessageOutcome = 'accepted' | 'unchanged' | 'rejected' | 'failed';

export interface RuntimeMetrics {
  handled(kind: string, outcome: MessageOutcome): void;
  decideSeconds(kind: string, seconds: number): void;
  persistSeconds(kind: string, seconds: number): void;
}

/** Per kind, read when Prometheus scrapes: the live actors and the messages waiting in (or being handled by) them. */
export type RuntimeCensus = () => ReadonlyMap<string, { alive: number; mailboxDepth: number }>;

/**
 * Labels are the actor kind only: an actor id as a label would give one time series per session, without bound.
 * Gauges are computed at scrape time from the live actors, so they cannot drift from the truth.
 */
export function createRuntimeMetrics(registry: Registry, census: RuntimeCensus): RuntimeMetrics {
  const registers = [registry];
  new Gauge({
    name: 'troupe_actors_alive', help: 'Actors currently in memory on this node', labelNames: ['kind'], registers,
    collect() {
      this.reset();
      for (const [kind, counts] of census()) this.set({ kind }, counts.alive);
    },
  });
  new Gauge({
    name: 'troupe_actor_mailbox_depth', help: 'Messages queued or being handled, summed over the actors of a kind',
    labelNames: ['kind'], registers,
    collect() {
      this.reset();
      for (const [kind, counts] of census()) this.set({ kind }, counts.mailboxDepth);
    },
  });
  const messages = new Counter({
    name: 'troupe_actor_messages_total', help: 'Messages handled by actors, by outcome', labelNames: ['kind', 'outcome'], registers,
  });
  // decide is pure and in-memory: sub-millisecond normally, so the buckets start at 10 µs.
  const decide = new LabelledHistogram<'kind'>({
    name: 'troupe_actor_decide_seconds', help: 'Time spent in decide', labelNames: ['kind'], registers,
    buckets: [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1],
  });
  const persistTime = new LabelledHistogram<'kind'>({
    name: 'troupe_actor_persist_seconds', help: 'Time to write a snapshot and its projections', labelNames: ['kind'], registers,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });
  // Every turn counts and observes: each series and counter child is resolved once per kind (and outcome) and kept,
  // rather than prom-client hashing a labels object on every call (3-4 % of a node's CPU under the lifecycle bench,
  // decision 0057). Kinds and outcomes are small closed sets.
  const decideOf = new Map<string, HistogramSeries>();
  const persistOf = new Map<string, HistogramSeries>();
  const countOf = new Map<string, { inc(): void }>();
  const series = (cache: Map<string, HistogramSeries>, histogram: LabelledHistogram<'kind'>, kind: string) => {
    let found = cache.get(kind);
    if (found === undefined) cache.set(kind, (found = histogram.labels({ kind })));
    return found;
  };
  return {
    handled: (kind, outcome) => {
      const key = `${kind}\u0000${outcome}`;
      let child = countOf.get(key);
      if (child === undefined) countOf.set(key, (child = messages.labels({ kind, outcome })));
      child.inc();
    },
    decideSeconds: (kind, seconds) => series(decideOf, decide, kind).observe(seconds),
    persistSeconds: (kind, seconds) => series(persistOf, persistTime, kind).observe(seconds),
  };
}

export const noMetrics: RuntimeMetrics = { handled: () => {}, decideSeconds: () => {}, persistSeconds: () => {} };
