/**
 * The GitHub repository a clone URL names, or null for any other host: `https://github.com/OWNER/REPO(.git)`,
 * `git@github.com:OWNER/REPO(.git)` and `ssh://git@github.com/OWNER/REPO(.git)`. Owner and repository names are
 * GitHub's own alphabet, so what is returned is safe in an API path.
 */
export interface GithubRepository { readonly owner: string; readonly repo: string }

const NAME = '([A-Za-z0-9-]{1,39})/([A-Za-z0-9_.-]{1,100}?)(?:\\.git)?/?';
const FORMS = [
  new RegExp(`^https://(?:[^@/]+@)?github\\.com/${NAME}$`, 'i'),
  new RegExp(`^git@github\\.com:${NAME}$`, 'i'),
  new RegExp(`^ssh://git@github\\.com(?::22)?/${NAME}$`, 'i'),
];

export function githubRepositoryOf(url: string): GithubRepository | null {
  for (const form of FORMS) {
    const m = form.exec(url.trim());
    if (m === null) continue;
    const repo = m[2]!;
    if (repo === '.' || repo === '..') return null;
    return { owner: m[1]!, repo };
  }
  return null;
}
