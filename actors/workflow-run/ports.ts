import type { RunEffect } from './machine.js';

/**
 * What a run needs from outside its own actor. `ask` reaches other actors through the transport (approval gates,
 * sessions). `dispatchAgent` is the seam to the session room: it must start (idempotently, keyed by
 * `sessionId`) a session with the step's prompt and arrange that its terminal status reaches the run as
 * `{type: 'run.agentFinished', sessionId, status, error?}` at `workflow-run/<runId>`.
 */
export type AskFn = <R = unknown>(address: string, message: unknown, timeoutMs?: number) => Promise<R>;

export interface RunPorts {
  readonly ask: AskFn;
  /**
   * Resolves with the session's status after the dispatch: a repeated dispatch (run.resume after a restart) may
   * find the session already terminal, whose report to the run was lost; the run then takes that status itself.
   */
  readonly dispatchAgent?: (effect: Extract<RunEffect, { type: 'dispatchAgent' }>) => Promise<{ readonly status: string } | void>;
}

/** The tracker-side identity of the session an agent step starts; its public id is the run's `sessionId`. */
export const trackerSessionIdFor = (runId: string, nodeId: string, visit: number): string => `workflow-run:${runId}:${nodeId}:${visit}`;

/** The run a tracker session id of `trackerSessionIdFor`'s form names, or null for any other tracker id. */
export function runIdOfTrackerSessionId(trackerSessionId: string): string | null {
  return /^workflow-run:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):/.exec(trackerSessionId)?.[1] ?? null;
}

/**
 * The default dispatch: `session.dispatch` to the session actor (actors/session), addressed by the public id the
 * run derived, so a repeated dispatch after a restart reaches the same session. `requestedBy` names the run
 * (`workflow-run:<runId>`): that is how the session room can route the terminal status back as
 * `run.agentFinished`. A live session names its driver instead, and reports back through live-session-reports.ts.
 * A failed ask fails the step with its reason, so a run never hangs on an agent nobody started.
 */
export function sessionDispatch(ask: AskFn): NonNullable<RunPorts['dispatchAgent']> {
  return async (effect) => {
    return ask<{ status: string }>(`session/${effect.sessionId}`, {
      type: 'session.dispatch',
      orgId: effect.orgId,
      projectId: effect.projectId,
      trackerSessionId: effect.trackerSessionId,
      prompt: effect.prompt,
      agentCardId: effect.agentCardId ?? null,
      trackerIssue: null,
      workType: effect.workType ?? null,
      provider: effect.provider ?? null,
      requestedBy: effect.requestedBy ?? `workflow-run:${effect.runId}`,
    });
  };
}
