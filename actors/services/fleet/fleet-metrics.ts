import { Gauge, Histogram, type Registry } from 'prom-client';
import type { Knex } from 'knex';
import type { ActorBehavior } from '../../runtime/machine.js';
import { withAnnouncement } from '../../runtime/announce.js';
import { registeredMetric } from '../../../ops/kernel/registered-metric.js';
import type { SessionEffect, SessionMsg, SessionReply, SessionState } from '../../kinds/session/machine.js';

/**
 * The fleet as an operator's dashboard sees it (issue 20): sessions by status, live workers, the queue's depth
 * (Hatchet's) and the time from dispatch to claim (Temporal's schedule-to-start). The gauges are cluster-wide
 * figures read from the read models when scraped, at most once per `FLEET_READ_EVERY_MS` per node, so a scrape
 * storm costs the database three small aggregates; every node reports the same figures under its own label.
 */
const FLEET_READ_EVERY_MS = 10_000;

/** Claim waits run from milliseconds (an idle worker polling) to hours (a queue with no capacity). */
const CLAIM_WAIT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

export function registerFleetGauges(registry: Registry, db: Knex, now: () => number, leaseMs: number): void {
  let read: { at: number; figures: Promise<FleetFigures> } | undefined;
  const figures = (): Promise<FleetFigures> => {
    if (read === undefined || now() - read.at >= FLEET_READ_EVERY_MS) {
      const at = now();
      read = { at, figures: readFleetFigures(db, at, leaseMs) };
      // A failed read is retried at the next scrape, not cached for ten seconds.
      read.figures.catch(() => { if (read?.at === at) read = undefined; });
    }
    return read.figures;
  };
  registeredMetric(registry, 'troupe_sessions', () => new Gauge({
    name: 'troupe_sessions', help: 'Sessions by status, cluster-wide (read at most every 10 s)', labelNames: ['status'],
    registers: [registry],
    async collect() {
      const f = await figures();
      this.reset();
      for (const [status, n] of Object.entries(f.byStatus)) this.set({ status }, n);
    },
  }));
  registeredMetric(registry, 'troupe_workers_live', () => new Gauge({
    name: 'troupe_workers_live', help: 'Workers seen within the session lease, cluster-wide', registers: [registry],
    async collect() { this.set((await figures()).liveWorkers); },
  }));
  registeredMetric(registry, 'troupe_session_queue_depth', () => new Gauge({
    name: 'troupe_session_queue_depth', help: 'Sessions waiting to be claimed (pending), cluster-wide', registers: [registry],
    async collect() { this.set((await figures()).queueDepth); },
  }));
}

interface FleetFigures {
  readonly byStatus: Record<string, number>;
  readonly liveWorkers: number;
  readonly queueDepth: number;
}

async function readFleetFigures(db: Knex, now: number, leaseMs: number): Promise<FleetFigures> {
  const [byStatus, workers] = await Promise.all([
    db('sessions').groupBy('status').select('status', db.raw('count(*)::int as n')) as Promise<{ status: string; n: number }[]>,
    db('daemon_workers').where('last_seen_at', '>=', new Date(now - leaseMs)).count<{ n: string }[]>('* as n'),
  ]);
  const counts = Object.fromEntries(byStatus.map((r) => [r.status, Number(r.n)]));
  return { byStatus: counts, liveWorkers: Number(workers[0]?.n ?? 0), queueDepth: counts.pending ?? 0 };
}

type SessionBehavior = ActorBehavior<SessionState, SessionMsg, SessionReply, SessionEffect>;

/** Sessions whose time of entering the queue a node remembers; past this the oldest is forgotten. */
const MAX_QUEUED_TRACKED = 100_000;

/**
 * Observes `troupe_session_claim_wait_seconds` (dispatch, or a return to the queue, to claim) once the claim is
 * durable: from the turn that moved the session from pending to claimed, never from one that failed to persist.
 * The moment it entered the queue is remembered by the node hosting the session; a session whose entry this node
 * did not see (its shard moved here) counts from its creation on its first run and from its last change otherwise.
 */
export function withClaimWait(behavior: SessionBehavior, registry: Registry | undefined): SessionBehavior {
  if (!registry) return behavior;
  const histogram = registeredMetric(registry, 'troupe_session_claim_wait_seconds', () => new Histogram({
    name: 'troupe_session_claim_wait_seconds', help: 'Time from a session entering the queue to a worker claiming it',
    buckets: CLAIM_WAIT_BUCKETS, registers: [registry],
  }));
  const queuedAt = new Map<string, number>();
  return withAnnouncement(behavior, {
    effectType: 'fleetMetrics.claimWait',
    announce: (previous, next, id) => {
      if (next.status === 'pending' && previous.status !== 'pending') {
        queuedAt.delete(id);
        queuedAt.set(id, next.updatedAt);
        if (queuedAt.size > MAX_QUEUED_TRACKED) queuedAt.delete(queuedAt.keys().next().value!);
        return undefined;
      }
      if (previous.status !== 'pending' || next.status === 'pending') return undefined;
      const since = queuedAt.get(id) ?? (previous.leaseReclaims === 0 && previous.epoch <= 1 ? previous.createdAt : previous.updatedAt);
      queuedAt.delete(id);
      return next.status === 'claimed' ? Math.max(0, next.updatedAt - since) / 1000 : undefined;
    },
    deliver: async (seconds) => histogram.observe(seconds),
  });
}
