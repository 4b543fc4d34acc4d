import { git } from './git.js';

/**
 * What the session's branch holds once its agent has exited, as the status report's `workspace` carries it:
 * the commits `base..branch` (newest first, at most 100, subjects cut to 300 characters), `git diff --shortstat` of
 * base and branch, and whether the worktree holds changes that no commit has (`git status --porcelain`). The branch,
 * not HEAD, is what is read and pushed: an agent that checked out something else still has its work judged by the
 * branch the session gave it (HEAD only when that branch is gone).
 */
export interface WorkspaceCommit {
  readonly sha: string;
  readonly subject: string;
}

export interface BranchState {
  readonly headCommit: string;
  readonly commits: readonly WorkspaceCommit[];
  readonly filesChanged: number;
  readonly insertions: number;
  readonly deletions: number;
  readonly dirty: boolean;
}

export const MAX_REPORTED_COMMITS = 100;
const MAX_SUBJECT_CHARS = 300;

export async function readBranchState(dir: string, branch: string, baseCommit: string, timeoutMs: number): Promise<BranchState> {
  const at = { cwd: dir, timeoutMs };
  const headCommit = (await git(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], at).catch(() => git(['rev-parse', '--verify', 'HEAD^{commit}'], at))).trim();
  const [log, shortstat, status] = await Promise.all([
    git(['-c', 'log.showSignature=false', 'log', '-z', '--no-color', `--max-count=${MAX_REPORTED_COMMITS}`, '--format=%H %s', `${baseCommit}..${headCommit}`], at),
    git(['diff', '--shortstat', '--no-ext-diff', '--no-textconv', '--no-color', baseCommit, headCommit], at),
    git(['status', '--porcelain', '-z'], at),
  ]);
  return { headCommit, commits: parseLog(log), ...parseShortstat(shortstat), dirty: status.length > 0 };
}

export function parseLog(output: string): WorkspaceCommit[] {
  return output.split('\0').filter((entry) => entry !== '').map((entry) => {
    const space = entry.indexOf(' ');
    const subject = entry.slice(space + 1);
    return { sha: entry.slice(0, space), subject: cutSubject(subject) };
  });
}

function cutSubject(subject: string): string {
  if (subject.length <= MAX_SUBJECT_CHARS) return subject;
  let end = MAX_SUBJECT_CHARS - 1;
  const last = subject.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${subject.slice(0, end)}…`;
}

/** ` 3 files changed, 10 insertions(+), 2 deletions(-)`; a part git leaves out (no deletions) is 0. */
export function parseShortstat(line: string): { filesChanged: number; insertions: number; deletions: number } {
  const count = (pattern: RegExp) => Number(pattern.exec(line)?.[1] ?? 0);
  return { filesChanged: count(/(\d+) files? changed/), insertions: count(/(\d+) insertions?\(\+\)/), deletions: count(/(\d+) deletions?\(-\)/) };
}
