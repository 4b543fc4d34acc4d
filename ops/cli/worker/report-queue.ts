import { ApiError, type WorkerApi } from './api.js';
import type { ServerConnection } from './connection.js';
import type { WorkerIdentity } from './identity.js';
import type { WorkerLog } from './log.js';
import type { OutputRelay } from './output-relay.js';
import type { PendingReport, StateDir } from './state.js';

const MAX_ERROR_CHARS = 4000;

export interface ReportQueueDeps {
  readonly api: WorkerApi;
  readonly identity: WorkerIdentity;
  readonly state: StateDir;
  readonly log: WorkerLog;
  readonly connection: ServerConnection;
}

/**
 * The outcomes the worker owes the server. Each is written to the state dir before its first try and removed once
 * the server has all its statuses, so an outage or a crash can neither lose nor double one: what the server does not
 * take now is sent again when it answers again, or at the next start.
 */
export class ReportQueue {
  private readonly sending = new Set<string>();
  /** Finished sessions whose last output could not be sent yet; their report waits for it. */
  private readonly owedOutput = new Map<string, OutputRelay>();

  constructor(private readonly deps: ReportQueueDeps) {}

  isSending(sessionId: string): boolean {
    return this.sending.has(sessionId);
  }

  get busy(): boolean {
    return this.sending.size > 0;
  }

  /** Persists the report before the first try; `owedOutput` is sent before it. */
  queue(report: PendingReport, owedOutput?: OutputRelay): void {
    if (owedOutput) this.owedOutput.set(report.sessionId, owedOutput);
    this.deps.state.saveReport(report);
    void this.send(report);
  }

  async sendPending(): Promise<void> {
    for (const r of this.deps.state.pendingReports()) await this.send(r);
  }

  private async send(report: PendingReport): Promise<void> {
    const { state, log } = this.deps;
    if (this.sending.has(report.sessionId)) return;
    if (report.workerId !== this.deps.identity.current?.workerId) {
      log('warn', 'session.report_dropped', 'a report of an earlier worker identity cannot be sent; the lease decides the session', { sessionId: report.sessionId });
      state.dropReport(report.sessionId);
      return;
    }
    this.sending.add(report.sessionId);
    try {
      const owed = this.owedOutput.get(report.sessionId);
      if (owed) {
        await owed.sendRest();
        this.owedOutput.delete(report.sessionId);
      }
      const delivered = await this.sendSteps(report);
      state.dropReport(report.sessionId);
      if (!delivered) {
        this.owedOutput.delete(report.sessionId);
        return;
      }
      log('info', 'session.reported', `reported ${report.steps[report.steps.length - 1]}`, { sessionId: report.sessionId });
    } catch (err) {
      log('warn', 'session.report_deferred', `report kept in the state dir until the server answers: ${(err as Error).message}`, { sessionId: report.sessionId });
      this.deps.connection.down(err);
    } finally {
      this.sending.delete(report.sessionId);
    }
  }

  /**
   * Sends the statuses still owed, in order, keeping the rest on disk after each. False when the server refused one
   * (the session was stopped or reclaimed meanwhile); throws while the server does not answer.
   */
  private async sendSteps(report: PendingReport): Promise<boolean> {
    const { api, identity, state, log } = this.deps;
    let steps = [...report.steps];
    while (steps.length > 0) {
      const status = steps[0]!;
      try {
        await api.status(identity.token, report.sessionId, {
          workerId: report.workerId, status, ...(status === 'finalizing' ? {} : { costUsd: report.costUsd }), ...(report.error && status === 'failed' ? { error: report.error.slice(0, MAX_ERROR_CHARS) } : {}),
          ...(status === 'running' ? {} : runMembers(report)),
        });
      } catch (err) {
        if (!(err instanceof ApiError) || err.status >= 500 || err.status === 429) throw err;
        const from = (err.body as { details?: { from?: string } } | undefined)?.details?.from;
        // A retry of a report that reached the server before its answer was lost: already there.
        if (err.status === 409 && from !== undefined && report.steps.slice(report.steps.indexOf(status)).includes(from as never)) {
          steps = steps.slice(steps.indexOf(from as never) + 1);
          if (steps.length === 0) break;
          continue;
        }
        log('warn', 'session.report_dropped', `not reported (${err.message}): the session was stopped or reclaimed meanwhile`, { sessionId: report.sessionId, status });
        return false;
      }
      steps = steps.slice(1);
      if (steps.length > 0) state.saveReport({ ...report, steps });
    }
    return true;
  }
}

/** The run's agent, usage and workspace go with the statuses after `running`; a report without them keeps the last. */
function runMembers(report: PendingReport) {
  return {
    ...(report.agent ? { agent: report.agent } : {}),
    ...(report.usage ? { usage: report.usage } : {}),
    // The generated body type has mutable arrays; the report is only read.
    ...(report.workspace ? { workspace: { ...report.workspace, commits: [...report.workspace.commits] } } : {}),
  };
}
