import type { OfferedSession } from './api.js';
import type { WorkerLog } from './log.js';
import {
  finishWorkspace, prepareWorkspace, sweepWorkspaces, workspacesSettled, type PreparedWorkspace, type WorkspaceReport,
} from './workspace/index.js';

/**
 * The worker's side of an offer's repository (issue 34 §2–3, decision 0077): the worktree is prepared once the claim
 * is answered (a refused claim makes nothing), the agent runs in it, and once the agent exits the branch is reported
 * and pushed, whether the run completed, failed or was stopped. Workspaces unused for `--keep-workspaces` hours go.
 */
export interface WorkspacePlace {
  readonly stateDir: string;
  readonly workDir: string;
  /** `--keep-workspaces`, in hours. */
  readonly keepHours: number;
}

/** A follow-up (run 2 and on) continues the session's worktree and branch; a first run starts one at the ref. */
export const isFollowUp = (offer: OfferedSession): boolean => (offer.run ?? 1) > 1;

/** The session's worktree, or undefined for an offer without a repository. Throws a `WorkspaceError` with git's words. */
export async function workspaceFor(offer: OfferedSession, place: WorkspacePlace): Promise<PreparedWorkspace | undefined> {
  const repository = offer.repository;
  if (repository === undefined || repository === null) return undefined;
  return prepareWorkspace({
    stateDir: place.stateDir, workDir: place.workDir, sessionId: offer.id,
    repository: { id: repository.id, url: repository.url, defaultBranch: repository.defaultBranch },
    ...(offer.ref ? { ref: offer.ref } : {}),
    followUp: isFollowUp(offer),
  });
}

/** The branch's report after the push; a failure is logged and leaves the report without a workspace. */
export async function finishedWorkspace(prepared: PreparedWorkspace, place: WorkspacePlace, log: WorkerLog): Promise<WorkspaceReport | undefined> {
  try {
    const report = await finishWorkspace(prepared, { stateDir: place.stateDir });
    const pushed = report.pushed ? `pushed ${report.branch}` : report.pushError ? `push refused: ${report.pushError}` : 'nothing to push';
    log(report.pushError ? 'warn' : 'info', 'workspace.finished', `${report.commits.length} commit(s), ${report.filesChanged} file(s) changed; ${pushed}`, {
      sessionId: prepared.sessionId, branch: report.branch, headCommit: report.headCommit, pushed: report.pushed,
    });
    return report;
  } catch (err) {
    log('error', 'workspace.finish_failed', `could not read or push the session's branch: ${(err as Error).message}`, { sessionId: prepared.sessionId });
    return undefined;
  }
}

const SWEEP_EVERY_MS = 15 * 60_000;

/** Sweeps now and every 15 minutes; the returned function stops it. */
export function startWorkspaceSweeps(place: WorkspacePlace, log: WorkerLog): () => void {
  let running = false;
  const sweep = (): void => {
    if (running) return;
    running = true;
    sweepWorkspaces({ stateDir: place.stateDir, workDir: place.workDir, keepHours: place.keepHours })
      .then(({ removed }) => {
        if (removed.length > 0) log('info', 'workspace.swept', `removed ${removed.length} workspace(s) unused for ${place.keepHours} h`, { removed });
      })
      .catch((err: unknown) => log('warn', 'workspace.sweep_failed', `could not sweep workspaces: ${(err as Error).message}`))
      .finally(() => { running = false; });
  };
  sweep();
  const timer = setInterval(sweep, SWEEP_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

export { workspacesSettled };
export type { PreparedWorkspace, WorkspaceReport };
