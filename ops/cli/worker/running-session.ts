import type { Agent } from './agent.js';
import type { AgentEvent } from './agents/index.js';
import type { WorkerLog } from './log.js';
import type { OutputRelay } from './output-relay.js';
import type { PreparedWorkspace } from './session-workspace.js';
import type { StepRelay } from './step-relay.js';

/** Why the worker ends an agent, and whether the session's outcome is still reported (as failed) afterwards. */
export interface StopOrder {
  readonly reason: string;
  readonly reportOutcome: boolean;
}

export interface SessionStart {
  readonly id: string;
  readonly projectId: string;
  readonly agent: Agent;
  /** Local time the claim was answered, to judge it against a held-sessions answer. */
  readonly claimedAt: number;
  /** Settles once the server answered `running` (or did not): the outcome report waits for it. */
  readonly runningReported: Promise<void>;
  readonly output: OutputRelay;
  readonly steps: StepRelay;
  /** The repository's worktree the agent runs in, for a session on a repository. */
  readonly workspace: PreparedWorkspace | undefined;
}

/** The run's tokens and cost as the agent last reported them (the status report's `usage`). */
export interface RunUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costUsd?: number;
}

/** A session whose agent this worker runs, from its start until its outcome is queued. */
export class RunningSession implements SessionStart {
  readonly id: string;
  readonly projectId: string;
  readonly agent: Agent;
  readonly claimedAt: number;
  readonly runningReported: Promise<void>;
  readonly output: OutputRelay;
  readonly steps: StepRelay;
  readonly workspace: PreparedWorkspace | undefined;
  readonly startedAt = Date.now();
  /** Whether the server acknowledged `running`; if not (it was gone), the outcome report starts with it. */
  runningAcked = false;
  costUsd = 0;
  usage: RunUsage | undefined;
  /** The agent's own conversation id, which a follow-up resumes. */
  agentSessionId: string | undefined;
  /** How the agent itself said the run ended, if it did. */
  agentResult: Extract<AgentEvent, { kind: 'result' }> | undefined;
  /** Set once the worker ends the agent. */
  stopOrder: StopOrder | undefined;
  private killTimer: NodeJS.Timeout | undefined;

  constructor(start: SessionStart, private readonly stopping: { readonly log: WorkerLog; readonly killGraceMs: number }) {
    this.id = start.id;
    this.projectId = start.projectId;
    this.agent = start.agent;
    this.claimedAt = start.claimedAt;
    this.runningReported = start.runningReported;
    this.output = start.output;
    this.steps = start.steps;
    this.workspace = start.workspace;
  }

  /** Ends the agent's process group: SIGTERM now, SIGKILL after the grace. The first order wins. */
  stopAgent(reason: string, reportOutcome: boolean): void {
    if (this.stopOrder) return;
    this.stopOrder = { reason, reportOutcome };
    const { log, killGraceMs } = this.stopping;
    log('info', 'session.stopping', `stopping the agent: ${reason}`, { sessionId: this.id });
    this.agent.signal('SIGTERM');
    this.killTimer = setTimeout(() => {
      if (this.agent.signal('SIGKILL')) log('warn', 'session.killed', `the agent outlived SIGTERM by ${killGraceMs} ms: SIGKILL`, { sessionId: this.id });
    }, killGraceMs);
  }

  /** The agent has exited: no SIGKILL is due to its group any more. */
  agentExited(): void {
    clearTimeout(this.killTimer);
  }
}
