import type { OutboundGuard } from '../outbound/index.js';
import { OutboundRefused } from '../outbound/index.js';

/**
 * The one place Troupe speaks Sentry's issue API (https://docs.sentry.io/api/events/list-an-organizations-issues/).
 * A session is linked to an issue by the Sentry tag `session_id` carrying the Troupe public session id (workers set
 * it on their Sentry scope), so the lookup is `GET {base}/api/0/organizations/{org}/issues/?query=session_id:<id>`.
 * The OAuth token names no Sentry organization, so the organizations the token can read are listed first
 * (`GET {base}/api/0/organizations/`) and searched in the order Sentry lists them, until the cap is reached.
 * Everything Sentry answers is treated as hostile: only known fields, typed and bounded, are kept.
 */
export const ERROR_ISSUES_CAP = 25;
/** A token reaching more organizations than this is unusual; the rest are not searched (bounded fan-out). */
const MAX_ORGANIZATIONS = 5;
const TIMEOUT_MS = 5_000;
const MAX_BYTES = 512 * 1024;
export const SENTRY_API_ORIGIN = 'https://sentry.io';

export interface ErrorTrackerIssue {
  readonly id: string;
  readonly shortId: string | null;
  readonly title: string;
  readonly culprit: string | null;
  readonly level: string | null;
  readonly status: string | null;
  readonly url: string | null;
  readonly count: number | null;
  readonly firstSeen: string | null;
  readonly lastSeen: string | null;
  readonly project: string | null;
  readonly organization: string;
}

/** Why a lookup produced nothing: the provider could not be reached or answered badly, or it refused our token. */
export class ErrorTrackerUnavailable extends Error {
  /** `status`: Sentry's HTTP status when it answered; 401 (token expired or revoked) is worth a token refresh, 403 is not. */
  constructor(readonly reason: 'unreachable' | 'unauthorized' | 'bad-response', readonly status?: number) {
    super(`error tracker ${reason}`);
    this.name = 'ErrorTrackerUnavailable';
  }
}

const str = (v: unknown, max: number): string | null => (typeof v === 'string' && v !== '' ? v.slice(0, max) : null);
const slugPattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

async function getJson(guard: OutboundGuard, url: string, accessToken: string): Promise<unknown> {
  let res;
  try {
    // No redirects: the bearer token must reach only the host it was issued for.
    res = await guard.request(url, {
      method: 'GET', timeoutMs: TIMEOUT_MS, maxBytes: MAX_BYTES, maxRedirects: 0,
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
    });
  } catch (err) {
    if (err instanceof OutboundRefused) throw new ErrorTrackerUnavailable('unreachable');
    throw err;
  }
  if (res.status === 401 || res.status === 403) throw new ErrorTrackerUnavailable('unauthorized', res.status);
  if (res.status < 200 || res.status >= 300) throw new ErrorTrackerUnavailable('unreachable');
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new ErrorTrackerUnavailable('bad-response');
  }
}

function issueFrom(raw: unknown, organization: string): ErrorTrackerIssue | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  const id = str(r.id, 64);
  const title = str(r.title, 500);
  if (id === null || title === null) return undefined;
  const project = typeof r.project === 'object' && r.project !== null ? (r.project as Record<string, unknown>) : {};
  const count = typeof r.count === 'string' || typeof r.count === 'number' ? Number(r.count) : NaN;
  const url = str(r.permalink, 2000);
  return {
    id, title, organization, shortId: str(r.shortId, 100), culprit: str(r.culprit, 500), level: str(r.level, 50), status: str(r.status, 50),
    // Only web links are passed on to browsers.
    url: url !== null && /^https?:\/\//.test(url) ? url : null,
    count: Number.isFinite(count) ? count : null, firstSeen: str(r.firstSeen, 64), lastSeen: str(r.lastSeen, 64),
    project: str(project.slug, 200),
  };
}

/** Issues tagged with this session, at most ERROR_ISSUES_CAP; throws ErrorTrackerUnavailable. */
export async function sentryIssuesForSession(
  guard: OutboundGuard, input: { baseUrl: string | undefined; accessToken: string; sessionId: string },
): Promise<ErrorTrackerIssue[]> {
  const base = (input.baseUrl ?? SENTRY_API_ORIGIN).replace(/\/+$/, '');
  const orgs = await getJson(guard, `${base}/api/0/organizations/`, input.accessToken);
  if (!Array.isArray(orgs)) throw new ErrorTrackerUnavailable('bad-response');
  const slugs = orgs
    .map((o) => (typeof o === 'object' && o !== null ? (o as Record<string, unknown>).slug : undefined))
    .filter((s): s is string => typeof s === 'string' && slugPattern.test(s))
    .slice(0, MAX_ORGANIZATIONS);
  const found: ErrorTrackerIssue[] = [];
  for (const slug of slugs) {
    if (found.length >= ERROR_ISSUES_CAP) break;
    const query = new URLSearchParams({ query: `session_id:${input.sessionId}`, limit: String(ERROR_ISSUES_CAP) });
    const issues = await getJson(guard, `${base}/api/0/organizations/${slug}/issues/?${query.toString()}`, input.accessToken);
    if (!Array.isArray(issues)) throw new ErrorTrackerUnavailable('bad-response');
    for (const raw of issues) {
      const issue = issueFrom(raw, slug);
      if (issue) found.push(issue);
      if (found.length >= ERROR_ISSUES_CAP) break;
    }
  }
  return found;
}
