/**
 * GitHub issue references, `owner/repo#number` (issue 30, finding 7). The owner and repo become path parts of
 * `POST /repos/{owner}/{repo}/issues/{number}/comments`, sent with the org's own token: a `..` would climb out of
 * `/repos/` (`../..#2` posted to `/api/issues/2/comments` on the same host). GitHub's own naming rules admit no such
 * part (owners: letters, digits, hyphens, and the underscore of Enterprise managed users; repositories: letters,
 * digits, `-`, `_`, `.`, but never `.` or `..`), so a reference outside them names no GitHub issue and is refused
 * wherever one enters.
 */
export interface GithubIssueRef {
  readonly owner: string;
  readonly repo: string;
  readonly number: number;
}

/** The loose shape: what could be meant as a GitHub reference (the strict rules are checked after). */
const SHAPE = /^([^/#]+)\/([^/#]+)#([1-9][0-9]{0,9})$/;
const OWNER = /^[A-Za-z0-9_-]{1,100}$/;
const REPO = /^[A-Za-z0-9_.-]{1,100}$/;
const DOT_SEGMENTS = new Set(['.', '..']);

export function parseGithubIssueRef(issue: string): GithubIssueRef | null {
  const m = SHAPE.exec(issue);
  if (!m) return null;
  // SHAPE's three groups always match; an empty default could not pass OWNER anyway.
  const [, owner = '', repo = '', number = ''] = m;
  if (!OWNER.test(owner) || !REPO.test(repo) || DOT_SEGMENTS.has(repo)) return null;
  return { owner, repo, number: Number(number) };
}

/**
 * Why a `trackerIssue` cannot be stored, or null when it can. A `#` is what makes a reference GitHub's (Linear's
 * identifiers are `ENG-123`), so anything carrying one must be a valid `owner/repo#number`; other labels are free.
 */
export function trackerIssueProblem(issue: string): string | null {
  if (!issue.includes('#')) return null;
  return parseGithubIssueRef(issue) === null
    ? "a trackerIssue with '#' names a GitHub issue and must be owner/repo#number: owner of letters, digits, '-' and '_', "
      + "repo of letters, digits, '-', '_' and '.' (not '.' or '..'), number from 1"
    : null;
}
