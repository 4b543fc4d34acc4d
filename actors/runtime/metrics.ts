import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

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
  const decide = new Histogram({
    name: 'troupe_actor_decide_seconds', help: 'Time spent in decide', labelNames: ['kind'], registers,
    buckets: [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1],
  });
  const persistTime = new Histogram({
    name: 'troupe_actor_persist_seconds', help: 'Time to write a snapshot and its projections', labelNames: ['kind'], registers,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });
  return {
    handled: (kind, outcome) => messages.inc({ kind, outcome }),
    decideSeconds: (kind, seconds) => decide.observe({ kind }, seconds),
    persistSeconds: (kind, seconds) => persistTime.observe({ kind }, seconds),
  };
}

export const noMetrics: RuntimeMetrics = { handled: () => {}, decideSeconds: () => {}, persistSeconds: () => {} };
