import { existsSync, renameSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { git, gitMaybe } from './git.js';
import { repositoryMutex } from './mirror.js';

/**
 * Removes the worktree at `dir` of the mirror at `mirrorDir`, and the branch `branch` when given (the mirror's space
 * for the session; a pushed branch stays on origin). Under the mirror's lock the dir is only renamed away and git
 * forgets it (`worktree prune`, which `git worktree remove --force` amounts to); deleting its files, the slow part,
 * happens after the lock is released, so other sessions' fetches of the repository do not wait for it.
 */
export const trashNamePattern = /^\.trash-[0-9a-f]{16}$/;

export async function removeWorktree(mirrorDir: string, dir: string, branch: string | undefined, timeoutMs: number): Promise<void> {
  const trash = path.join(path.dirname(dir), `.trash-${randomBytes(8).toString('hex')}`);
  await repositoryMutex.run(mirrorDir, async () => {
    if (existsSync(dir)) renameSync(dir, trash);
    if (!existsSync(mirrorDir)) return;
    await git(['worktree', 'prune'], { cwd: mirrorDir, timeoutMs });
    if (branch !== undefined) await gitMaybe(['update-ref', '-d', `refs/heads/${branch}`], { cwd: mirrorDir, timeoutMs });
  });
  rmSync(trash, { recursive: true, force: true });
}

/** Makes git forget worktrees whose dir is gone, so that a new one may take the path again. */
export async function pruneWorktrees(mirrorDir: string, timeoutMs: number): Promise<void> {
  await repositoryMutex.run(mirrorDir, () => git(['worktree', 'prune'], { cwd: mirrorDir, timeoutMs }));
}
