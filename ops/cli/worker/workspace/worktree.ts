import { existsSync, readdirSync, readFileSync, realpathSync, rmdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { git, gitMaybe, WorkspaceError } from './git.js';
import { repositoryMutex } from './mirror.js';
import { addWorktree } from './add.js';
import { pruneWorktrees, removeWorktree } from './remove.js';
import { takeSpare } from './spare.js';

/**
 * The session's worktree at `<work dir>/<sessionId>` on its branch `troupe/<sessionId>`:
 * - a first run makes it from the ref's commit (a leftover of an earlier attempt is removed first);
 * - a follow-up reuses it when it still exists (the agent finds the files it left), else makes it again from where
 *   the session's branch got to: the local branch when it holds everything origin has of it (a push that failed
 *   left commits only here), else origin's `troupe/<sessionId>`, else the ref;
 * - the base reported is where the branch left the ref (`git merge-base`), the first run's start commit unless the
 *   ref was rewritten since; so a follow-up's report covers the whole branch, as a pull request would.
 */
export type WorktreeStart = 'created' | 'reused' | 'rebuilt';

export interface OpenWorktreeOptions {
  readonly mirrorDir: string;
  readonly dir: string;
  readonly branch: string;
  readonly refCommit: string;
  readonly followUp: boolean;
  readonly useSpare: boolean;
  readonly timeoutMs: number;
}

export interface OpenedWorktree {
  readonly start: WorktreeStart;
  readonly baseCommit: string;
}

export async function openWorktree(o: OpenWorktreeOptions): Promise<OpenedWorktree> {
  const state = worktreeState(o.mirrorDir, o.dir);
  if (state === 'taken') throw new WorkspaceError('dir-taken', `${o.dir} exists and is not a worktree of this repository's mirror`);
  if (state === 'ours' && o.followUp) {
    return { start: 'reused', baseCommit: await mergeBase(o.dir, o.refCommit, 'HEAD', o.timeoutMs) };
  }
  if (state === 'ours') await removeWorktree(o.mirrorDir, o.dir, undefined, o.timeoutMs);
  else if (registeredButMissing(o.mirrorDir, o.dir)) await pruneWorktrees(o.mirrorDir, o.timeoutMs);
  const from = o.followUp ? (await branchContinuation(o.mirrorDir, o.branch, o.timeoutMs)) ?? o.refCommit : o.refCommit;
  await createWorktree(o, from);
  const baseCommit = from === o.refCommit ? o.refCommit : await mergeBase(o.mirrorDir, o.refCommit, from, o.timeoutMs);
  return { start: o.followUp ? 'rebuilt' : 'created', baseCommit };
}

async function createWorktree(o: OpenWorktreeOptions, from: string): Promise<void> {
  const spare = o.useSpare ? takeSpare(o.mirrorDir) : undefined;
  if (spare !== undefined) {
    try {
      await repositoryMutex.run(o.mirrorDir, () => git(['worktree', 'move', spare.dir, o.dir], { cwd: o.mirrorDir, timeoutMs: o.timeoutMs }));
      await git(['checkout', '--quiet', '--no-track', '-B', o.branch, from], { cwd: o.dir, timeoutMs: o.timeoutMs });
      return;
    } catch {
      // The spare was only a head start; whichever path it is at now, it goes, and the tree is made as without one.
      await removeWorktree(o.mirrorDir, existsSync(o.dir) ? o.dir : spare.dir, undefined, o.timeoutMs);
    }
  }
  await addWorktree(o.mirrorDir, o.dir, ['--no-track', '-B', o.branch], from, o.timeoutMs);
}

/**
 * Where a follow-up whose worktree is gone continues: the local branch when origin's copy is absent or already in it,
 * else origin's copy (someone pushed to it since), else nothing (the session never committed: start from the ref).
 */
async function branchContinuation(mirrorDir: string, branch: string, timeoutMs: number): Promise<string | undefined> {
  const answer = await git(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
    cwd: mirrorDir, timeoutMs, input: `refs/heads/${branch}^{commit}\nrefs/remotes/origin/${branch}^{commit}\n`,
  });
  const [local, pushed] = answer.split('\n').slice(0, 2).map((line) => (line.endsWith(' commit') ? line.split(' ')[0] : undefined));
  if (local === undefined || pushed === undefined) return local ?? pushed;
  const pushedIsInLocal = await gitMaybe(['merge-base', '--is-ancestor', pushed, local], { cwd: mirrorDir, timeoutMs });
  return pushedIsInLocal !== undefined ? local : pushed;
}

async function mergeBase(cwd: string, refCommit: string, head: string, timeoutMs: number): Promise<string> {
  const base = (await gitMaybe(['merge-base', refCommit, head], { cwd, timeoutMs }))?.trim();
  return base !== undefined && /^[0-9a-f]{40}$/.test(base) ? base : refCommit;
}

/**
 * What is at `dir`: `ours` (a worktree of this mirror: its `.git` file points at the mirror's `worktrees/<name>`,
 * which points back), `absent`, or `taken` (anything else, never touched). An empty dir counts as absent and is
 * removed. Read from the files, not asked of git, which would walk up from a plain dir into any enclosing repository.
 */
function worktreeState(mirrorDir: string, dir: string): 'ours' | 'absent' | 'taken' {
  if (!existsSync(dir)) return 'absent';
  if (statSync(dir).isDirectory() && readdirSync(dir).length === 0) {
    rmdirSync(dir);
    return 'absent';
  }
  try {
    const gitdir = /^gitdir: (.+)$/m.exec(readFileSync(path.join(dir, '.git'), 'utf8'))?.[1]?.trim();
    if (gitdir === undefined) return 'taken';
    const admin = realpathSync(path.resolve(dir, gitdir));
    const backLink = realpathSync(path.dirname(readFileSync(path.join(admin, 'gitdir'), 'utf8').trim()));
    const inMirror = path.dirname(admin) === path.join(realpathSync(mirrorDir), 'worktrees');
    return inMirror && backLink === realpathSync(dir) ? 'ours' : 'taken';
  } catch {
    return 'taken';
  }
}

/** Whether the mirror still lists a worktree at `dir` although the dir is gone (deleted by hand): git then refuses the path. */
function registeredButMissing(mirrorDir: string, dir: string): boolean {
  const admins = path.join(mirrorDir, 'worktrees');
  if (!existsSync(admins) || !existsSync(path.dirname(dir))) return false;
  const expected = path.join(realpathSync(path.dirname(dir)), path.basename(dir), '.git');
  return readdirSync(admins).some((name) => {
    try {
      return readFileSync(path.join(admins, name, 'gitdir'), 'utf8').trim() === expected;
    } catch {
      return false;
    }
  });
}
