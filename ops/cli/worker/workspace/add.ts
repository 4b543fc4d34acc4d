import { git } from './git.js';
import { repositoryMutex } from './mirror.js';

/**
 * `git worktree add` in two steps: the worktree registered and its HEAD set under the mirror's lock (`--no-checkout`,
 * quick), its files written after the lock is released. A fetch that ran while a worktree was half made found a HEAD
 * naming no object yet and failed ("bad object worktrees/<name>/HEAD": a session of ten failed to start in CI).
 */
export async function addWorktree(mirrorDir: string, dir: string, how: readonly string[], from: string, timeoutMs: number): Promise<void> {
  await repositoryMutex.run(mirrorDir, () => git(['worktree', 'add', '--quiet', '--no-checkout', ...how, dir, from], { cwd: mirrorDir, timeoutMs }));
  await git(['reset', '--hard', '--quiet'], { cwd: dir, timeoutMs });
}
