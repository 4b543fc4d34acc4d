import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { insideDir } from '../inside-dir.js';
import { gitAuth } from './askpass.js';
import { defaultTimeouts, WorkspaceError, type WorkspaceTimeouts } from './git.js';
import { checkRef, checkRepository, checkSessionId, fullCommitPattern, repositoryIdPattern, type WorkspaceRepository } from './inputs.js';
import { mirrorDirOf, refreshMirror, resolveRef } from './mirror.js';
import { pushBranch } from './push.js';
import { touchRecord } from './records.js';
import { readBranchState, type WorkspaceCommit } from './report.js';
import { sessionLocks, workspacesInUse } from './sessions.js';
import { refillSpare, sparesSettled } from './spare.js';
import { sweepWorkspaces as sweep } from './sweep.js';
import { openWorktree, type WorktreeStart } from './worktree.js';

/**
 * The worker's git workspaces (issue 34, decision 0074), as three calls: `prepareWorkspace` before the agent starts
 * (mirror fetched, the session's worktree made, reused or rebuilt), `finishWorkspace` once after it exits, also when
 * it failed or was stopped (the report's `workspace`, and the push), and `sweepWorkspaces` now and then
 * (`--keep-workspaces`). Every failure is a `WorkspaceError` whose message holds no credential.
 */
export { WorkspaceError, GitError } from './git.js';
export type { WorkspaceTimeouts } from './git.js';
export type { WorkspaceRepository } from './inputs.js';
export type { WorkspaceCommit } from './report.js';

export interface PrepareWorkspaceOptions {
  readonly stateDir: string;
  readonly workDir: string;
  readonly sessionId: string;
  readonly repository: WorkspaceRepository;
  /** Branch, tag or commit to start from; the repository's default branch when absent. */
  readonly ref?: string;
  /** A run after the first (the offer's `run` > 1): continue the session's worktree and branch. */
  readonly followUp: boolean;
  /** A token git is given through GIT_ASKPASS (e.g. a GitHub connection's), for the fetch. */
  readonly askpassToken?: string;
  /** Accept `file://` repository URLs (default: `TROUPE_ALLOW_FILE_REPOSITORIES=1` in the environment, as on the node). */
  readonly allowFileRepositories?: boolean;
  /** Keep a spare worktree of the repository checked out ahead for the next start (default true). */
  readonly spare?: boolean;
  readonly timeouts?: Partial<WorkspaceTimeouts>;
}

/** Plain data: the worker may keep it with its owed report and finish after a restart. */
export interface PreparedWorkspace {
  readonly sessionId: string;
  readonly repositoryId: string;
  /** The agent's working directory. */
  readonly dir: string;
  readonly branch: string;
  readonly baseCommit: string;
  readonly start: WorktreeStart;
}

/** The status report's `workspace` member, exactly as the protocol of issue 34 defines it. */
export interface WorkspaceReport {
  readonly repository: string;
  readonly branch: string;
  readonly baseCommit: string;
  readonly headCommit: string;
  readonly commits: readonly WorkspaceCommit[];
  readonly filesChanged: number;
  readonly insertions: number;
  readonly deletions: number;
  readonly dirty: boolean;
  readonly pushed: boolean;
  readonly pushError?: string;
}

export interface FinishWorkspaceOptions {
  readonly stateDir: string;
  /** A token git is given through GIT_ASKPASS, for the push. */
  readonly askpassToken?: string;
  readonly timeouts?: Partial<WorkspaceTimeouts>;
}

export const branchOf = (sessionId: string): string => `troupe/${sessionId}`;

export async function prepareWorkspace(o: PrepareWorkspaceOptions): Promise<PreparedWorkspace> {
  const timeouts = { ...defaultTimeouts, ...o.timeouts };
  const sessionId = checkSessionId(o.sessionId);
  const repository = checkRepository(o.repository, o.allowFileRepositories ?? process.env.TROUPE_ALLOW_FILE_REPOSITORIES === '1');
  const wanted = o.ref ?? repository.defaultBranch;
  if (wanted === undefined) throw new WorkspaceError('invalid-input', 'no ref to start from: neither a ref nor the repository\'s default branch was given');
  const ref = await checkRef(wanted, timeouts.localMs);
  const workDir = path.resolve(o.workDir);
  mkdirSync(workDir, { recursive: true, mode: 0o700 });
  const dir = insideDir(workDir, sessionId);
  const mirrorDir = mirrorDirOf(o.stateDir, repository.id);
  const branch = branchOf(sessionId);
  return sessionLocks.run(dir, async () => {
    workspacesInUse.add(dir);
    try {
      touchRecord(o.stateDir, { sessionId, repositoryId: repository.id, dir });
      await refreshMirror(mirrorDir, repository.url, { auth: gitAuth(o.stateDir, o.askpassToken), timeouts });
      const refCommit = await resolveRef(mirrorDir, ref, timeouts.localMs);
      const useSpare = o.spare ?? true;
      const opened = await openWorktree({ mirrorDir, dir, branch, refCommit, followUp: o.followUp, useSpare, timeoutMs: timeouts.localMs });
      if (useSpare) refillSpare(mirrorDir, workDir, refCommit, timeouts.localMs);
      return { sessionId, repositoryId: repository.id, dir, branch, baseCommit: opened.baseCommit, start: opened.start };
    } catch (err) {
      workspacesInUse.delete(dir);
      throw err;
    }
  });
}

/** The branch's report, after pushing it when it has commits of its own; the workspace may then be swept in time. */
export async function finishWorkspace(prepared: PreparedWorkspace, o: FinishWorkspaceOptions): Promise<WorkspaceReport> {
  const timeouts = { ...defaultTimeouts, ...o.timeouts };
  const sessionId = checkSessionId(prepared.sessionId);
  const sound = repositoryIdPattern.test(prepared.repositoryId) && prepared.branch === branchOf(sessionId)
    && fullCommitPattern.test(prepared.baseCommit) && path.isAbsolute(prepared.dir) && path.basename(prepared.dir) === sessionId;
  if (!sound) throw new WorkspaceError('invalid-input', `refusing to finish a workspace of session ${sessionId} that prepareWorkspace did not describe`);
  const { dir, branch, baseCommit, repositoryId } = prepared;
  return sessionLocks.run(dir, async () => {
    try {
      const state = await readBranchState(dir, branch, baseCommit, timeouts.localMs);
      const push = state.commits.length > 0 ? await pushBranch(dir, branch, gitAuth(o.stateDir, o.askpassToken), timeouts.networkMs) : { pushed: false };
      return { repository: repositoryId, branch, baseCommit, ...state, ...push };
    } finally {
      touchRecord(o.stateDir, { sessionId, repositoryId, dir });
      workspacesInUse.delete(dir);
    }
  });
}

export interface SweepWorkspacesOptions {
  readonly stateDir: string;
  readonly workDir: string;
  /** `--keep-workspaces`: hours since a workspace was last prepared or finished (default 24). */
  readonly keepHours?: number;
  readonly timeouts?: Partial<WorkspaceTimeouts>;
}

export async function sweepWorkspaces(o: SweepWorkspacesOptions): Promise<{ readonly removed: readonly string[] }> {
  const keepHours = o.keepHours ?? 24;
  // A cut-off that is not a number would compare as "older" for every workspace, and remove them all.
  if (!Number.isFinite(keepHours) || keepHours < 0) throw new WorkspaceError('invalid-input', `refusing to sweep with keepHours ${keepHours}: not a number of hours ≥ 0`);
  return sweep({ stateDir: o.stateDir, workDir: o.workDir, keepHours, timeoutMs: { ...defaultTimeouts, ...o.timeouts }.localMs });
}

/** Resolves when no background git work (a spare being made) is left: before a drain ends or a test removes dirs. */
export const workspacesSettled = sparesSettled;
