import type { OutboundGuard } from '../outbound/index.js';
import { OutboundRefused } from '../outbound/index.js';
import { AccessTokenRejected } from '../oauth/connection-token.js';
import type { Tracker } from '../../../../storage/sessions/tracker-comments.js';
import { githubCommentsUrl } from './github-comments-url.js';

/**
 * Posting one comment on a tracker issue (decision 0028), in each tracker's own API:
 * - Linear: GraphQL `commentCreate(input: {issueId, body})` at `{TROUPE_LINEAR_API_URL}/graphql` (issueId takes the
 *   issue's id or its identifier); a 200 carrying `errors`, or `success: false`, is a refusal.
 * - GitHub: `POST {TROUPE_GITHUB_API_URL}/repos/{owner}/{repo}/issues/{number}/comments` with `{body}`.
 * Both with the org's OAuth access token as a Bearer token and no redirects (the token reaches only that host).
 * A 401 throws AccessTokenRejected (the caller refreshes the token once); other outcomes are `TrackerAnswer`s.
 */
export const DEFAULT_TRACKER_API_URLS: Readonly<Record<Tracker, string>> = { linear: 'https://api.linear.app', github: 'https://api.github.com' };
const TIMEOUT_MS = 10_000;
const MAX_BYTES = 256 * 1024;

/** What a tracker made of a comment: posted, refused for good (a 4xx), or not now (a 5xx, 429, no answer). */
export type TrackerAnswer =
  | { readonly kind: 'posted'; readonly url: string | null }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'unavailable'; readonly reason: string };

const LINEAR_COMMENT = 'mutation TroupeComment($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id url } } }';

export async function postTrackerComment(
  guard: OutboundGuard, apiUrl: string, tracker: Tracker, issue: string, body: string, accessToken: string,
): Promise<TrackerAnswer> {
  const base = apiUrl.replace(/\/+$/, '');
  const headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'Troupe' };
  let url: string;
  let payload: unknown;
  if (tracker === 'linear') {
    url = `${base}/graphql`;
    payload = { query: LINEAR_COMMENT, variables: { input: { issueId: issue, body } } };
  } else {
    const target = githubCommentsUrl(base, issue);
    if (target === null) return { kind: 'refused', reason: `'${issue}' names no GitHub issue (owner/repo#number, no '.' or '..' parts)` };
    url = target;
    Object.assign(headers, { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' });
    payload = { body };
  }
  let res;
  try {
    res = await guard.request(url, { method: 'POST', headers, body: JSON.stringify(payload), timeoutMs: TIMEOUT_MS, maxBytes: MAX_BYTES, maxRedirects: 0 });
  } catch (err) {
    if (err instanceof OutboundRefused) {
      // A target the guard refuses (a private address not allowed) will not become allowed by waiting.
      return err.reason === 'address' || err.reason === 'scheme' || err.reason === 'credentials'
        ? { kind: 'refused', reason: `the ${tracker} API address is refused: ${err.message}` }
        : { kind: 'unavailable', reason: `${tracker} unreachable: ${err.message}` };
    }
    throw err;
  }
  if (res.status === 401) throw new AccessTokenRejected();
  if (res.status === 429 || res.status >= 500) return { kind: 'unavailable', reason: `${tracker} answered ${res.status}` };
  if (res.status < 200 || res.status >= 300) return { kind: 'refused', reason: `${tracker} answered ${res.status}: ${snippet(res.body)}` };
  let answer: Record<string, any>;
  try {
    answer = JSON.parse(res.body.toString('utf8')) as Record<string, any>;
  } catch {
    // Posted (the status says so) even if we cannot read which comment it made.
    return { kind: 'posted', url: null };
  }
  if (tracker === 'github') return { kind: 'posted', url: webUrl(answer?.html_url) };
  if (Array.isArray(answer?.errors) && answer.errors.length > 0) {
    const first = answer.errors[0] as Record<string, any>;
    const code = String(first?.extensions?.code ?? '');
    if (code === 'RATELIMITED') return { kind: 'unavailable', reason: 'linear rate limit' };
    if (code === 'AUTHENTICATION_ERROR') throw new AccessTokenRejected();
    return { kind: 'refused', reason: `linear: ${String(first?.message ?? 'error').slice(0, 300)}` };
  }
  const created = answer?.data?.commentCreate;
  if (created?.success !== true) return { kind: 'refused', reason: 'linear did not create the comment' };
  return { kind: 'posted', url: webUrl(created?.comment?.url) };
}

const webUrl = (v: unknown): string | null => (typeof v === 'string' && /^https?:\/\//.test(v) && v.length <= 2000 ? v : null);
const snippet = (body: Buffer): string => body.toString('utf8').replace(/\s+/g, ' ').slice(0, 300);
