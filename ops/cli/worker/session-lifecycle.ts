import type { Agent, AgentExit } from './agent.js';
import { ApiError, type OfferedSession, type WorkerApi } from './api.js';
import type { WorkerIdentity } from './identity.js';
import type { WorkerLog } from './log.js';
import { OutputRelay } from './output-relay.js';
import type { ReportQueue } from './report-queue.js';
import { RunningSession } from './running-session.js';
import { startAgent, type PreparedAgent } from './session-agent.js';
import { describeExit, outcomeReport, startFailedReport } from './session-outcome.js';
import type { PendingReport } from './state.js';
import type { SessionTable } from './session-table.js';

export interface SessionLifecycleDeps {
  readonly api: WorkerApi;
  readonly identity: WorkerIdentity;
  readonly table: SessionTable;
  readonly reports: ReportQueue;
  readonly log: WorkerLog;
  readonly agentCommand: string;
  readonly killGraceMs: number;
  /** A session ended and its slot is free again. */
  readonly slotFreed: () => void;
}

/**
 * A claimed session from its agent's start to its outcome: the agent starts, `running` is reported, its output is
 * relayed, and when it exits its outcome is queued as a report, once, unless the worker ended it unreported.
 */
export class SessionLifecycle {
  constructor(private readonly deps: SessionLifecycleDeps) {}

  start(offer: OfferedSession, prepared: PreparedAgent): void {
    const { table, log } = this.deps;
    const claimedAt = Date.now();
    let session: RunningSession | undefined;
    const output = this.relayFor(offer.id, () => session);
    let agent: Agent;
    try {
      agent = startAgent(offer, prepared, this.deps.agentCommand, {
        output: (line) => { if (session) session.output.add(line); },
        cost: (costUsd) => { if (session) session.costUsd = costUsd; },
        stderr: (line) => log('debug', 'agent.stderr', line, { sessionId: offer.id }),
      });
    } catch (err) {
      log('error', 'session.start_failed', `could not start the agent: ${(err as Error).message}`, { sessionId: offer.id });
      this.deps.reports.queue(startFailedReport(offer.id, this.deps.identity.workerId, err as Error));
      return;
    }
    const runningReported = this.reportRunning(offer.id, () => session);
    session = new RunningSession(
      { id: offer.id, projectId: offer.projectId, agent, claimedAt, runningReported, output },
      { log, killGraceMs: this.deps.killGraceMs },
    );
    table.running.set(offer.id, session);
    const agentDir = prepared.agentDir ?? '';
    log('info', 'session.started', `agent started, pid ${agent.pid ?? '?'}, in ${agentDir}`, { sessionId: offer.id, pid: agent.pid, workDir: agentDir });
    const started = session;
    void agent.exited.then((exit) => this.finish(started, exit));
  }

  private relayFor(sessionId: string, session: () => RunningSession | undefined): OutputRelay {
    const { api, identity, table } = this.deps;
    return new OutputRelay(sessionId, api, identity, {
      isRunning: () => { const s = session(); return s !== undefined && table.holds(s); },
      keepsUnsent: () => { const stop = session()?.stopOrder; return !stop || stop.reportOutcome; },
      notHeld: () => {
        const s = session();
        if (s && !s.stopOrder) s.stopAgent('the server says this worker no longer holds the session', false);
      },
    });
  }

  /** A 409 to `running` means the session was stopped before its agent started: the agent ends unreported. */
  private reportRunning(sessionId: string, session: () => RunningSession | undefined): Promise<void> {
    const { api, identity, log } = this.deps;
    return api.status(identity.token, sessionId, { workerId: identity.workerId, status: 'running' }).then(
      () => { const s = session(); if (s) s.runningAcked = true; },
      (err: unknown) => {
        const s = session();
        if (err instanceof ApiError && err.status === 409 && s && !s.stopOrder) s.stopAgent('the session was stopped before it started', false);
        else if (!(err instanceof ApiError)) log('warn', 'session.report_failed', `could not report running: ${(err as Error).message}`, { sessionId });
      },
    );
  }

  /** The agent exited: the session's outcome is reported, unless the worker ended it with nothing to report. */
  private async finish(s: RunningSession, exit: AgentExit): Promise<void> {
    s.agentExited();
    const seconds = ((Date.now() - s.startedAt) / 1000).toFixed(1);
    const how = describeExit(exit);
    if (s.stopOrder && !s.stopOrder.reportOutcome) {
      s.output.stopTimer();
      this.deps.table.running.delete(s.id);
      // Kill whatever the agent left in its group.
      s.agent.signal('SIGKILL');
      this.deps.log('info', 'session.stopped', `stopped after ${seconds}s (${how}): ${s.stopOrder.reason}`, { sessionId: s.id, exitCode: exit.code, signal: exit.signal, durationSeconds: Number(seconds) });
      this.deps.slotFreed();
      return;
    }
    await s.runningReported;
    const report = await this.reportOutcome(s, exit);
    const outcome = report.steps[report.steps.length - 1];
    this.deps.log('info', 'session.finished', `finished with ${how} after ${seconds}s: ${outcome}${s.costUsd ? `, cost $${s.costUsd}` : ''}`, {
      sessionId: s.id, exitCode: exit.code, signal: exit.signal, durationSeconds: Number(seconds), outcome, costUsd: s.costUsd,
    });
    this.deps.slotFreed();
  }

  /**
   * The step from a finished session to its report. Output not yet sent (the server is gone) goes before the
   * report, which waits for it; the session leaves the table once its report is queued.
   */
  private async reportOutcome(s: RunningSession, exit: AgentExit): Promise<PendingReport> {
    const allSent = await s.output.flush().catch(() => false);
    const owedOutput = !allSent && s.output.hasUnsent ? s.output : undefined;
    // Kill whatever the agent left in its group.
    s.agent.signal('SIGKILL');
    const report = outcomeReport(s, exit, this.deps.identity.workerId);
    this.deps.reports.queue(report, owedOutput);
    this.deps.table.running.delete(s.id);
    return report;
  }
}
