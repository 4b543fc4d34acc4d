import type { Agent, AgentExit } from './agent.js';
import { openAgentLine, type AgentLinePlace, type OpenedLine } from './agent-line.js';
import type { AgentEvent } from './agents/index.js';
import { ApiError, type OfferedSession, type WorkerApi } from './api.js';
import type { WorkerIdentity } from './identity.js';
import type { WorkerLog } from './log.js';
import { OutputRelay } from './output-relay.js';
import type { ReportQueue } from './report-queue.js';
import { RunningSession } from './running-session.js';
import { startAgent, type PreparedAgent, type WorkerAgent } from './session-agent.js';
import { describeExit, outcomeReport, startFailedReport } from './session-outcome.js';
import { finishedWorkspace, workspaceFor, type PreparedWorkspace, type WorkspacePlace } from './session-workspace.js';
import type { PendingReport } from './state.js';
import type { SessionTable } from './session-table.js';
import { StepRelay } from './step-relay.js';

export interface SessionLifecycleDeps {
  readonly api: WorkerApi;
  readonly identity: WorkerIdentity;
  readonly table: SessionTable;
  readonly reports: ReportQueue;
  readonly log: WorkerLog;
  readonly agent: WorkerAgent;
  readonly workspaces: WorkspacePlace;
  readonly killGraceMs: number;
  /** Where the agents' line to the team goes (decision 0088). */
  readonly line: AgentLinePlace;
  /** A session ended and its slot is free again. */
  readonly slotFreed: () => void;
}

/**
 * A claimed session from its agent's start to its outcome: its repository's worktree is prepared, the agent starts,
 * `running` is reported, what the agent writes is relayed (output, tool steps) or kept (usage, its conversation id),
 * and when it exits the branch is reported and pushed and its outcome is queued as a report, once, unless the worker
 * ended it unreported.
 */
export class SessionLifecycle {
  /** The agent line of each running session, closed (its token file removed) when its agent has exited. */
  private readonly lines = new Map<string, OpenedLine>();

  constructor(private readonly deps: SessionLifecycleDeps) {}

  /** Resolves once the agent started, or its failure to start was queued as the session's report. */
  async start(offer: OfferedSession, prepared: PreparedAgent): Promise<void> {
    const { log } = this.deps;
    let workspace: PreparedWorkspace | undefined;
    try {
      workspace = await workspaceFor(offer, this.deps.workspaces);
    } catch (err) {
      this.startFailed(offer, new Error(`its workspace could not be prepared: ${(err as Error).message}`));
      return;
    }
    if (workspace) log('info', 'workspace.ready', `${workspace.start} worktree on ${workspace.branch} at ${workspace.baseCommit.slice(0, 12)}`, { sessionId: offer.id, dir: workspace.dir });
    const dir = workspace?.dir ?? prepared.agentDir ?? '';
    const line = await openAgentLine(offer.id, this.deps.line, this.deps).catch((err: unknown) => {
      log('warn', 'agent_line.unavailable', `no agent line for this session: ${(err as Error).message}`, { sessionId: offer.id });
      return undefined;
    });
    if (line) this.lines.set(offer.id, line);
    this.run(offer, prepared, dir, workspace, line);
  }

  private closeLine(sessionId: string): void {
    this.lines.get(sessionId)?.close();
    this.lines.delete(sessionId);
  }

  private run(offer: OfferedSession, prepared: PreparedAgent, dir: string, workspace: PreparedWorkspace | undefined, line?: OpenedLine): void {
    const { table, log } = this.deps;
    const claimedAt = Date.now();
    let session: RunningSession | undefined;
    const output = this.relayFor(offer.id, () => session);
    let agent: Agent;
    try {
      agent = startAgent(offer, prepared, dir, this.deps.agent, {
        onEvent: (event) => { if (session) this.take(session, event); },
        onStderr: (text) => log('debug', 'agent.stderr', text, { sessionId: offer.id }),
      }, line);
    } catch (err) {
      this.closeLine(offer.id);
      if (workspace) void finishedWorkspace(workspace, this.deps.workspaces, log);
      this.startFailed(offer, err as Error);
      return;
    }
    output.onBacklog((full) => {
      if (full) agent.pauseOutput();
      else agent.resumeOutput();
      log(full ? 'info' : 'debug', 'session.output_backlog', full
        ? 'over 1 MiB of output not yet taken by the server: the agent\'s output is no longer read until it is'
        : 'the server caught up with the output: reading the agent\'s output again', { sessionId: offer.id, paused: full });
    });
    const runningReported = this.reportRunning(offer.id, () => session);
    const steps = new StepRelay(offer.id, `r${offer.run ?? 1}-${claimedAt.toString(36)}`, this.deps.api, this.deps.identity);
    session = new RunningSession(
      { id: offer.id, projectId: offer.projectId, agent, claimedAt, runningReported, output, steps, workspace },
      { log, killGraceMs: this.deps.killGraceMs },
    );
    table.running.set(offer.id, session);
    log('info', 'session.started', `${this.deps.agent.preset.name} agent started, pid ${agent.pid ?? '?'}, in ${dir}`, {
      sessionId: offer.id, pid: agent.pid, workDir: dir, preset: this.deps.agent.preset.name, run: offer.run ?? 1,
    });
    const started = session;
    void agent.exited.then((exit) => this.finish(started, exit));
  }

  private startFailed(offer: OfferedSession, err: Error): void {
    this.deps.log('error', 'session.start_failed', `could not start the agent: ${err.message}`, { sessionId: offer.id });
    this.deps.reports.queue(startFailedReport(offer.id, this.deps.identity.workerId, err));
  }

  /** What one parsed line of the agent's stdout means to the session. */
  private take(s: RunningSession, event: AgentEvent): void {
    switch (event.kind) {
      case 'output': s.output.add(`${event.text}\n`); break;
      case 'tool': s.steps.add(event.name, event.summary); break;
      case 'usage':
        s.usage = { inputTokens: event.inputTokens, outputTokens: event.outputTokens, ...(event.costUsd === undefined ? {} : { costUsd: event.costUsd }) };
        if (event.costUsd !== undefined) s.costUsd = event.costUsd;
        break;
      case 'cost': s.costUsd = event.costUsd; break;
      case 'agentSession': s.agentSessionId = event.id; break;
      case 'result': s.agentResult = event; break;
    }
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

  /** The agent exited: its branch is reported and pushed, then its outcome, unless the worker ended it with nothing to report. */
  private async finish(s: RunningSession, exit: AgentExit): Promise<void> {
    s.agentExited();
    // Kill whatever the agent left in its group before its worktree is read.
    s.agent.signal('SIGKILL');
    this.closeLine(s.id);
    const seconds = ((Date.now() - s.startedAt) / 1000).toFixed(1);
    const how = describeExit(exit);
    const [workspace] = await Promise.all([
      s.workspace ? finishedWorkspace(s.workspace, this.deps.workspaces, this.deps.log) : undefined,
      s.steps.end(),
    ]);
    if (s.stopOrder && !s.stopOrder.reportOutcome) {
      s.output.stopTimer();
      this.deps.table.running.delete(s.id);
      this.deps.log('info', 'session.stopped', `stopped after ${seconds}s (${how}): ${s.stopOrder.reason}`, { sessionId: s.id, exitCode: exit.code, signal: exit.signal, durationSeconds: Number(seconds) });
      this.deps.slotFreed();
      return;
    }
    await s.runningReported;
    const report = await this.reportOutcome(s, exit, workspace);
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
  private async reportOutcome(s: RunningSession, exit: AgentExit, workspace: PendingReport['workspace']): Promise<PendingReport> {
    const allSent = await s.output.flush().catch(() => false);
    const owedOutput = !allSent && s.output.hasUnsent ? s.output : undefined;
    const report = outcomeReport(s, exit, this.deps.identity.workerId, { preset: this.deps.agent.preset.name, workspace });
    this.deps.reports.queue(report, owedOutput);
    this.deps.table.running.delete(s.id);
    return report;
  }
}
