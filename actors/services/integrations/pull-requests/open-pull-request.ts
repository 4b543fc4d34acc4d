import type { OutboundGuard, OutboundResponse } from '../outbound/index.js';
import { OutboundRefused } from '../outbound/index.js';
import { AccessTokenRejected } from '../oauth/connection-token.js';

/**
 * Opening one pull request in GitHub's REST API (decision 0076): `POST {api}/repos/{owner}/{repo}/pulls` with
 * `{title, head, base, body}`, with the org's OAuth access token as a Bearer token and no redirects (the token
 * reaches only that host). GitHub's 422 "A pull request already exists" means an earlier attempt (or a person) opened
 * it: it is looked up (`GET …/pulls?head=owner:branch`) and recorded instead of failing. A 401 throws
 * AccessTokenRejected (the caller refreshes the token once); other outcomes are `PullRequestAnswer`s.
 */
const TIMEOUT_MS = 10_000;
const MAX_BYTES = 512 * 1024;
const REPOSITORY = /^([A-Za-z0-9-]{1,39})\/([A-Za-z0-9_.-]{1,100})$/;

export interface PullRequestToOpen {
  /** `owner/repo`. */
  readonly repository: string;
  readonly head: string;
  readonly base: string;
  readonly title: string;
  readonly body: string;
}

/** What GitHub made of it: opened (or found open), refused for good (a 4xx), or not now (a 5xx, 429, no answer). */
export type PullRequestAnswer =
  | { readonly kind: 'opened'; readonly number: number; readonly url: string }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'unavailable'; readonly reason: string };

export async function openPullRequest(guard: OutboundGuard, apiUrl: string, pr: PullRequestToOpen, accessToken: string): Promise<PullRequestAnswer> {
  const m = REPOSITORY.exec(pr.repository);
  if (m === null || m[2] === '.' || m[2] === '..') return { kind: 'refused', reason: `'${pr.repository}' names no GitHub repository` };
  const owner = m[1]!;
  const pulls = `${apiUrl.replace(/\/+$/, '')}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(m[2]!)}/pulls`;
  const headers = {
    authorization: `Bearer ${accessToken}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28',
    'content-type': 'application/json', 'user-agent': 'Troupe',
  };
  const created = await exchange(guard, pulls, { method: 'POST', headers, body: JSON.stringify({ title: pr.title, head: pr.head, base: pr.base, body: pr.body }) });
  if (created.kind !== 'answered') return created;
  const res = created.res;
  if (res.status === 201 || res.status === 200) return openedFrom(parse(res.body)) ?? { kind: 'refused', reason: 'GitHub opened a pull request but did not say which' };
  if (res.status === 422 && alreadyExists(parse(res.body))) {
    const found = await exchange(guard, `${pulls}?head=${encodeURIComponent(`${owner}:${pr.head}`)}&state=open&per_page=1`, { method: 'GET', headers });
    if (found.kind !== 'answered') return found;
    if (found.res.status !== 200) return unexpected(found.res);
    const list = parse(found.res.body);
    const opened = Array.isArray(list) ? openedFrom(list[0]) : null;
    // GitHub said one exists and lists none: closed in between, or not visible yet. Asked again later.
    return opened ?? { kind: 'unavailable', reason: `GitHub reports a pull request for ${pr.head} already exists but lists none open` };
  }
  return unexpected(res);
}

type Exchanged = { readonly kind: 'answered'; readonly res: OutboundResponse } | Extract<PullRequestAnswer, { kind: 'refused' | 'unavailable' }>;

async function exchange(guard: OutboundGuard, url: string, init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string }): Promise<Exchanged> {
  let res: OutboundResponse;
  try {
    res = await guard.request(url, { ...init, timeoutMs: TIMEOUT_MS, maxBytes: MAX_BYTES, maxRedirects: 0 });
  } catch (err) {
    if (err instanceof OutboundRefused) {
      // A target the guard refuses (a private address not allowed) will not become allowed by waiting.
      return err.reason === 'address' || err.reason === 'scheme' || err.reason === 'credentials'
        ? { kind: 'refused', reason: `the GitHub API address is refused: ${err.message}` }
        : { kind: 'unavailable', reason: `GitHub unreachable: ${err.message}` };
    }
    throw err;
  }
  if (res.status === 401) throw new AccessTokenRejected();
  return { kind: 'answered', res };
}

/** A 429, a 5xx or GitHub's rate limit (a 403 saying so) is worth waiting for; any other answer is final. */
function unexpected(res: OutboundResponse): PullRequestAnswer {
  const text = res.body.toString('utf8').replace(/\s+/g, ' ').slice(0, 300);
  const rateLimited = res.status === 403 && (res.headers['x-ratelimit-remaining'] === '0' || /rate limit/i.test(text));
  if (res.status === 429 || res.status >= 500 || rateLimited) return { kind: 'unavailable', reason: `GitHub answered ${res.status}` };
  return { kind: 'refused', reason: `GitHub answered ${res.status}: ${text}` };
}

function parse(body: Buffer): any {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
}

function openedFrom(pr: any): { kind: 'opened'; number: number; url: string } | null {
  const number = pr?.number;
  const url = pr?.html_url;
  if (!Number.isSafeInteger(number) || number <= 0 || typeof url !== 'string' || !/^https?:\/\//.test(url) || url.length > 2000) return null;
  return { kind: 'opened', number, url };
}

/** GitHub's validation failure for a head that already has an open pull request into that base. */
function alreadyExists(answer: any): boolean {
  const messages = [answer?.message, ...(Array.isArray(answer?.errors) ? answer.errors.map((e: any) => e?.message) : [])];
  return messages.some((msg) => typeof msg === 'string' && /pull request already exists/i.test(msg));
}
