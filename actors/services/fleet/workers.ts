import type { Knex } from 'knex';
import { pausedWorkers } from '../../../storage/queue-control/pauses.js';

/**
 * The org's workers as the console's fleet page shows them: newest heartbeat first, each with its capacity, the
 * sessions it holds (its load), its projects and whether it is live (seen within the session lease, the rule the
 * lease sweeper and `fleetStats` use), and whether it is paused (offered no new work, decision 0079). Bounded: an org with more workers than this pages through the CLI.
 */
export const MAX_WORKERS_LISTED = 500;

export interface WorkerRow {
  readonly id: string;
  readonly hostname: string;
  readonly maxAgents: number;
  readonly activeSessions: number;
  readonly projects: readonly { id: string; name: string | null }[];
  readonly registeredAt: string;
  readonly lastSeenAt: string;
  readonly live: boolean;
  readonly paused: boolean;
  readonly pausedAt: string | null;
  readonly pausedBy: string | null;
}

const heldStatuses = ['claimed', 'running', 'paused', 'finalizing'];
const iso = (v: unknown): string => (v instanceof Date ? v : new Date(String(v))).toISOString();

export async function listWorkers(db: Knex, orgId: string, now: number, leaseMs: number): Promise<WorkerRow[]> {
  const [workers, held, projects, paused] = await Promise.all([
    db('daemon_workers').where({ org_id: orgId }).orderBy([{ column: 'last_seen_at', order: 'desc' }, { column: 'id' }]).limit(MAX_WORKERS_LISTED)
      .select('id', 'hostname', 'max_agents', 'project_ids', 'registered_at', 'last_seen_at'),
    db('sessions').where({ org_id: orgId }).whereIn('status', heldStatuses).whereNotNull('worker_id')
      .groupBy('worker_id').select('worker_id', db.raw('count(*)::int as n')),
    db('projects').where({ org_id: orgId }).select('id', 'name'),
    pausedWorkers(db, orgId),
  ]);
  const load = new Map((held as { worker_id: string; n: number }[]).map((r) => [r.worker_id, Number(r.n)]));
  const names = new Map((projects as { id: string; name: string }[]).map((p) => [p.id, p.name]));
  return (workers as Record<string, unknown>[]).map((w) => {
    const ids = (typeof w.project_ids === 'string' ? JSON.parse(w.project_ids) : w.project_ids) as string[];
    const lastSeenAt = iso(w.last_seen_at);
    const pause = paused.get(w.id as string);
    return {
      id: w.id as string, hostname: w.hostname as string, maxAgents: Number(w.max_agents), activeSessions: load.get(w.id as string) ?? 0,
      projects: ids.map((id) => ({ id, name: names.get(id) ?? null })), registeredAt: iso(w.registered_at), lastSeenAt,
      live: Date.parse(lastSeenAt) >= now - leaseMs,
      paused: pause !== undefined, pausedAt: pause?.pausedAt ?? null, pausedBy: pause?.pausedBy ?? null,
    };
  });
}
