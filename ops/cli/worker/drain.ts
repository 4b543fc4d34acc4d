import { sleep } from './backoff.js';
import type { Lifetime } from './lifetime.js';
import type { WorkerLog } from './log.js';
import type { ReportQueue } from './report-queue.js';
import type { SessionTable } from './session-table.js';
import type { StateDir } from './state.js';

/** How long a drain waits for reports and claims on the wire once every session ended. */
const REPORTS_WAIT_MS = 10_000;
const REPORTS_CHECK_MS = 50;

export interface DrainDeps {
  readonly lifetime: Lifetime;
  readonly table: SessionTable;
  readonly reports: ReportQueue;
  readonly state: StateDir;
  readonly log: WorkerLog;
  readonly drainTimeoutSeconds: number;
  /** Ends the heartbeat, the streams and the poll; resolves once they ended, or after a bound. */
  readonly stopLoops: () => Promise<void>;
}

/**
 * SIGTERM: takes no new work, lets running sessions finish within the drain timeout, then stops the rest (reported
 * failed with the reason), waits for the reports (bounded), and ends the worker.
 */
export class Drain {
  private allSessionsEnded: (() => void) | undefined;

  constructor(private readonly deps: DrainDeps) {}

  async drain(): Promise<void> {
    const { lifetime, table, reports, state, log } = this.deps;
    if (lifetime.draining) return;
    lifetime.draining = true;
    const timeout = this.deps.drainTimeoutSeconds;
    log('info', 'worker.draining', `draining: no new work; ${table.running.size} session(s) may finish within ${timeout}s`, { running: table.running.size });
    if (table.running.size > 0) {
      const allDone = new Promise<void>((resolve) => { this.allSessionsEnded = resolve; });
      const deadline = sleep(timeout * 1000, undefined, true);
      await Promise.race([allDone, deadline]);
      table.stopAll(`the worker was drained: the drain timeout of ${timeout}s passed`, true);
      await allDone;
    }
    const reportsDeadline = Date.now() + REPORTS_WAIT_MS;
    while ((reports.busy || table.claiming.size > 0) && Date.now() < reportsDeadline) await sleep(REPORTS_CHECK_MS);
    await this.shutdown();
    const left = state.pendingReports().length;
    log('info', 'worker.stopped', left ? `stopped; ${left} report(s) wait in the state dir for the next start` : 'stopped', { pendingReports: left });
    lifetime.end();
  }

  /** A session ended while draining: the drain goes on once none runs. */
  sessionEnded(): void {
    if (this.deps.table.running.size === 0) this.allSessionsEnded?.();
  }

  /** Ends the loops; sessions are left as they are. */
  async shutdown(): Promise<void> {
    this.deps.lifetime.stopping = true;
    await this.deps.stopLoops();
  }
}
