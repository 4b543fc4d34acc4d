import { git, GitError, gitMessageOf, type GitAuth } from './git.js';

/**
 * `git push origin troupe/<sessionId>`, once: a fast-forward only (never forced, so commits someone else pushed to
 * the branch are never overwritten), and no retry loop: a refusal is reported with git's own words, at most 2,000
 * characters (the end, where git says why), and the branch stays in the worktree for a follow-up to push again.
 */
export interface PushOutcome {
  readonly pushed: boolean;
  readonly pushError?: string;
}

const MAX_PUSH_ERROR_CHARS = 2000;

export async function pushBranch(dir: string, branch: string, auth: GitAuth, timeoutMs: number): Promise<PushOutcome> {
  try {
    await git([...auth.config, 'push', '--no-verify', 'origin', `refs/heads/${branch}:refs/heads/${branch}`], { cwd: dir, timeoutMs, env: auth.env });
    return { pushed: true };
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    const reason = err.code === 'git-timeout' ? err.message : gitMessageOf(err.gitMessage, MAX_PUSH_ERROR_CHARS);
    return { pushed: false, pushError: reason.slice(-MAX_PUSH_ERROR_CHARS) || `git push failed (exit ${err.exitCode})` };
  }
}
