import type { WorkerApi } from './api.js';
import type { WorkerIdentity } from './identity.js';
import type { WorkerLog } from './log.js';
import type { ReportQueue } from './report-queue.js';
import type { RefusalLog } from './server-data.js';
import { isSessionId } from './server-ids.js';
import { failSteps } from './session-outcome.js';
import type { SessionTable } from './session-table.js';
import type { StateDir } from './state.js';

export interface ReconcilerDeps {
  readonly api: WorkerApi;
  readonly identity: WorkerIdentity;
  readonly table: SessionTable;
  readonly reports: ReportQueue;
  readonly state: StateDir;
  readonly refusals: RefusalLog;
  readonly log: WorkerLog;
}

/**
 * After (re)connecting: a session the worker runs that the server no longer gives to it was stopped or reclaimed
 * while the worker could not hear of it, so its agent ends and nothing is reported; a session the server gives it
 * that it does not run (a restart lost the agent) is reported failed. Only claims answered before the held list
 * was asked for are judged.
 */
export class Reconciler {
  private firstReconcile = true;

  constructor(private readonly deps: ReconcilerDeps) {}

  async reconcile(before: number): Promise<void> {
    const { api, identity, table, log } = this.deps;
    let held: Map<string, string>;
    try {
      held = new Map((await api.heldSessions(identity.token)).sessions.map((s) => [s.id, s.status]));
    } catch (err) {
      log('debug', 'reconcile.failed', `could not list held sessions: ${(err as Error).message}`);
      return;
    }
    for (const s of table.running.values()) {
      if (s.claimedAt < before && !held.has(s.id) && !s.stopOrder) s.stopAgent('the server no longer gives this session to the worker (stopped or reclaimed while away)', false);
    }
    // Orphans exist only right after a start: later, every held session is running, being claimed or reported.
    if (!this.firstReconcile) return;
    this.firstReconcile = false;
    this.reportOrphans(held);
  }

  private reportOrphans(held: Map<string, string>): void {
    const { identity, table, reports, state, log } = this.deps;
    const owed = new Set(state.pendingReports().map((r) => r.sessionId));
    for (const [id, status] of held) {
      if (table.running.has(id) || table.claiming.has(id) || owed.has(id) || reports.isSending(id)) continue;
      // Its report would be a file named after the id: an id that is not one is the server's fault, and only logged.
      if (!isSessionId(id)) {
        this.deps.refusals.note('session.ignored', 'the server lists a held session whose id is not a session id; ignored', id);
        continue;
      }
      log('warn', 'session.orphaned', 'held by this worker but no agent runs it (the worker restarted): reporting it failed', { sessionId: id });
      reports.queue({ sessionId: id, workerId: identity.workerId, steps: failSteps(status), costUsd: 0, error: 'the worker restarted and lost the agent', exitCode: null });
    }
  }
}
