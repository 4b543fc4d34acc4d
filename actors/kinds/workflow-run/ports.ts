import type { Knex } from 'knex';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { DEFAULT_PRIORITY, type SessionRepository } from '../../../schemas/sessions/session-state.js';
import { defaultConcurrencyKey } from '../../../schemas/queue-control/concurrency.js';
import { resolveRepository } from '../../../storage/repositories/repositories.js';
import { publicIdOfKey } from '../../../storage/sessions/queries.js';
import type { RunEffect } from './run-state.js';

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
  /** Finds the repository an agent node names; without it (unit tests) a node naming one fails its step. */
  readonly repositories?: RepositoryLookup;
  /** Refuses a new session of a project over its monthly budget (actors/services/budgets); without it (unit tests) none is checked. */
  readonly budget?: DispatchBudget;
}

/** Throws BUDGET_EXCEEDED when the project may not start another session (decision 0080). */
export type DispatchBudget = (orgId: string, projectId: string) => Promise<void>;

/** What an agent node's `repository` needs from storage (decision 0075). */
export interface RepositoryLookup {
  /** The project's repository by id, name or URL, as the session keeps it. */
  find(orgId: string, projectId: string, reference: string): Promise<SessionRepository | undefined>;
  /** Whether the session under this key exists: a step replayed after its repository was removed still reaches it. */
  dispatched(orgId: string, sessionKey: string): Promise<boolean>;
}

export function repositoryLookup(db: Knex): RepositoryLookup {
  return {
    async find(orgId, projectId, reference) {
      const r = await resolveRepository(db, orgId, projectId, reference);
      return r && { id: r.id, url: r.url, name: r.name, defaultBranch: r.defaultBranch };
    },
    dispatched: async (orgId, sessionKey) => (await publicIdOfKey(db, orgId, sessionKey)) !== undefined,
  };
}

/** The repository and ref a step's session runs on; empty when the node names none. */
async function workspaceOf(
  effect: Extract<RunEffect, { type: 'dispatchAgent' }>, repositories: RepositoryLookup | undefined,
): Promise<{ repository?: SessionRepository; ref?: string }> {
  if (effect.repository === undefined) return {};
  const repository = await repositories?.find(effect.orgId, effect.projectId, effect.repository);
  if (repository) return { repository, ref: effect.ref ?? repository.defaultBranch };
  // A replay of a step whose session exists answers that session, whatever became of the repository since.
  if (repositories && await repositories.dispatched(effect.orgId, effect.sessionId)) return {};
  throw new TroupeError('VALIDATION_FAILED', `the project has no repository "${effect.repository.slice(0, 200)}"`, { field: 'repository' });
}

/** The tracker-side identity of the session an agent step starts; its public id is the run's `sessionId`. */
export const trackerSessionIdFor = (runId: string, nodeId: string, visit: number): string => `workflow-run:${runId}:${nodeId}:${visit}`;

/** The run a tracker session id of `trackerSessionIdFor`'s form names, or null for any other tracker id. */
export function runIdOfTrackerSessionId(trackerSessionId: string): string | null {
  return /^workflow-run:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):/.exec(trackerSessionId)?.[1] ?? null;
}

/**
 * The default dispatch: `session.dispatch` to the session actor (actors/kinds/session), addressed by the public id the
 * run derived, so a repeated dispatch after a restart reaches the same session. `requestedBy` names the run
 * (`workflow-run:<runId>`): that is how the session room can route the terminal status back as
 * `run.agentFinished`. A live session names its driver instead, and reports back through live-session-reports.ts.
 * A failed ask fails the step with its reason, so a run never hangs on an agent nobody started; so does a project over
 * its monthly budget (`BUDGET_EXCEEDED`).
 */
export function sessionDispatch(ask: AskFn, repositories?: RepositoryLookup, budget?: DispatchBudget): NonNullable<RunPorts['dispatchAgent']> {
  return async (effect) => {
    // A step replayed after a restart reaches the session it started, whatever was spent since.
    if (budget && !(repositories && await repositories.dispatched(effect.orgId, effect.sessionId))) await budget(effect.orgId, effect.projectId);
    const workspace = await workspaceOf(effect, repositories);
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
      ...workspace,
      priority: effect.priority ?? DEFAULT_PRIORITY,
      concurrencyKey: defaultConcurrencyKey(workspace.repository, workspace.ref, null),
    });
  };
}
