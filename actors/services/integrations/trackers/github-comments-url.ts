import { parseGithubIssueRef } from '../../../../storage/sessions/github-issue-ref.js';

/**
 * The one URL a GitHub comment may go to, `{base}/repos/{owner}/{repo}/issues/{number}/comments`, or null. A stored
 * reference is not trusted to have passed the checks at dispatch (rows older than them, or written some other way):
 * it is parsed again, each part is encoded, and the URL as a client would resolve it (dot segments removed, `%2e`
 * decoded) must still be exactly that path under the base, or nothing is sent with the org's token (issue 30, 7).
 */
export function githubCommentsUrl(base: string, issue: string): string | null {
  const ref = parseGithubIssueRef(issue);
  if (ref === null) return null;
  const path = `/repos/${encodeURIComponent(ref.owner)}/${encodeURIComponent(ref.repo)}/issues/${ref.number}/comments`;
  const url = `${base.replace(/\/+$/, '')}${path}`;
  let resolved: URL;
  let baseUrl: URL;
  try {
    resolved = new URL(url);
    baseUrl = new URL(base);
  } catch {
    return null;
  }
  const basePath = baseUrl.pathname.replace(/\/+$/, '');
  return resolved.origin === baseUrl.origin && resolved.pathname === `${basePath}${path}` ? url : null;
}
