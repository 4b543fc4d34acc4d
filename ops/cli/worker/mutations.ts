import type { Mutation } from './api.js';
import type { WorkerLog } from './log.js';
import type { SessionTable } from './session-table.js';
import type { StateDir } from './state.js';

/** What a mutation (delivered with the heartbeat's answer) may change. */
export interface MutationTargets {
  readonly log: WorkerLog;
  readonly state: StateDir;
  readonly table: SessionTable;
  /** The resource pool this worker's sessions run in, if any. */
  readonly pool: string | undefined;
  readonly projectCount: () => number;
  readonly pollSoon: () => void;
  /** Drains as on SIGTERM: no new work, running sessions finish within the drain timeout, then the worker exits 0. */
  readonly drain: () => void;
}

/** Applies one mutation the server queued for this worker; one it does not know is logged and ignored. */
export function applyMutation(m: Mutation, to: MutationTargets): void {
  const { log } = to;
  const params = m.params ?? {};
  switch (m.op) {
    case 'project.add':
    case 'project.remove':
      // The projects themselves come with the renewed token; the poll takes what they now allow.
      log('info', 'mutation.applied', `${m.op} ${String(params.projectId)}: now taking work for ${to.projectCount()} project(s)`, { mutationId: m.id, op: m.op, projectId: params.projectId });
      to.pollSoon();
      return;
    case 'modelAccess.set':
      to.state.setModelAccess({ allow: params.allow ?? [], deny: params.deny ?? [], ...(params.reason ? { reason: params.reason } : {}) });
      log('info', 'mutation.applied', 'modelAccess.set: new sessions receive the policy', { mutationId: m.id, op: m.op, allow: params.allow, deny: params.deny });
      return;
    case 'modelAccess.clear':
      to.state.clearModelAccess();
      log('info', 'mutation.applied', 'modelAccess.clear: new sessions receive no model-access policy', { mutationId: m.id, op: m.op, workloadId: params.workloadId });
      return;
    case 'pool.deleted': {
      const mine = to.pool !== undefined && params.poolId === to.pool;
      log('info', 'mutation.applied', mine
        ? `pool.deleted ${String(params.poolId)}: stopping its ${to.table.running.size} session(s)`
        : `pool.deleted ${String(params.poolId)}: not this worker's pool`, { mutationId: m.id, op: m.op, poolId: params.poolId });
      if (mine) to.table.stopAll(`resource pool ${String(params.poolId)} was deleted`, true);
      return;
    }
    case 'worker.drain':
      log('info', 'mutation.applied', 'worker.drain: draining as on SIGTERM, by request of the server', { mutationId: m.id, op: m.op });
      to.drain();
      return;
    default:
      log('warn', 'mutation.unknown', `mutation ${m.op} is not known to this worker; ignored`, { mutationId: m.id, op: m.op });
  }
}
