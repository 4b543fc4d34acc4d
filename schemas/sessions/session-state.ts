/**
 * The session actor's snapshot and the effects its turns leave, as the actor decides them (actors/kinds/session) and
 * its projection writes them to the read models (storage/sessions, storage/analytics).
 */

/** What each status means: actors/kinds/session/machine.ts. */
export const sessionStatuses = ['absent', 'pending', 'claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] as const;

export type SessionStatus = (typeof sessionStatuses)[number];
export const terminalStatuses = ['completed', 'failed', 'stopped'] as const satisfies readonly SessionStatus[];

export type TerminalStatus = (typeof terminalStatuses)[number];

/** A dispatch's priority when it names none (decision 0081): the middle of 0–9. */
export const DEFAULT_PRIORITY = 5;

export interface SessionSpec {
  readonly orgId: string;
  readonly projectId: string;
  readonly trackerSessionId: string;
  readonly prompt: string;
  readonly agentCardId: string | null;
  readonly trackerIssue: string | null;
  readonly workType: string | null;
  readonly provider: string | null;
  readonly requestedBy: string;
  /**
   * The project repository the session runs on, as it was at dispatch (decision 0075), and the branch, tag or commit it
   * starts from. Absent from sessions dispatched before repositories existed; null when none was named.
   */
  readonly repository?: SessionRepository | null;
  readonly ref?: string | null;
  /** The agent preset the dispatch asked for (`claude-code`, …); the worker's own `--agent` otherwise. */
  readonly agent?: string | null;
  /** 0–9, higher offered first (decision 0081); absent (5) on sessions dispatched before priorities existed. */
  readonly priority?: number;
  /** Sessions sharing a key are held to the project's concurrency limit (decision 0081); null for none. */
  readonly concurrencyKey?: string | null;
}

export interface SessionRepository {
  readonly id: string;
  readonly url: string;
  readonly name: string;
  readonly defaultBranch: string;
}

export interface SessionState {
  readonly status: SessionStatus;
  /** Absent only while status is 'absent'. */
  readonly spec: SessionSpec | null;
  readonly prompt: string;
  readonly workerId: string | null;
  readonly epoch: number;
  readonly costUsd: number;
  readonly error: string | null;
  readonly phase: string | null;
  readonly leaseReclaims: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly claimedAt: number | null;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
}

/**
 * What the actor does once a state is decided. Read-model writes run in the snapshot transaction (`project`);
 * each carries the idempotency key it is recorded under, so a replayed projection does nothing twice.
 */
export type SessionEffect =
  | { readonly type: 'sessionWritten' }
  | { readonly type: 'promptRecorded'; readonly promptId: string; readonly text: string; readonly queued: boolean }
  | { readonly type: 'activity'; readonly key: string; readonly kind: string; readonly body: string }
  | {
      readonly type: 'terminal';
      /** `<sessionId>:<epoch>:terminal`: the one key every terminal effect of this run is recorded under. */
      readonly key: string;
      readonly status: TerminalStatus;
      readonly costUsd: number;
      readonly workerId: string | null;
    }
  /**
   * Someone or something stopped the run (`session.stop`): the stop is audited, with the reason the server stopped it
   * for when it did (`budget`, `superseded`), in the same statement as the snapshot, so exactly once per stop.
   */
  | {
      readonly type: 'stopRecorded';
      readonly requestedBy: string;
      readonly previousStatus: string;
      readonly reason: string | null;
      readonly details: Readonly<Record<string, string | number | null>>;
    }
  /**
   * The worker holding the session no longer does (a stop, a reclaim or a failure after a lost lease): it is told to
   * end the agent and report nothing, once the change is durable.
   */
  | {
      readonly type: 'workerStopped';
      readonly orgId: string;
      /** The public id: workers know sessions by it (decision 0068). */
      readonly sessionId: string;
      readonly workerId: string;
      readonly status: string;
      readonly reason: string;
    }
  /**
   * The session was started by a workflow run's agent step (`requestedBy: workflow-run:<runId>`): its terminal
   * status goes back to that run as `run.agentFinished` after the state is durable. Re-sending is harmless, as the
   * run takes only the session it waits for, once.
   */
  | { readonly type: 'notifyRun'; readonly runId: string; readonly status: TerminalStatus; readonly error: string | null };
