import type { Deps } from '../../deps.js';
import { AccessTokenRejected, ConnectionUnusable, withConnectionToken } from '../oauth/connection-token.js';
import { ErrorTrackerUnavailable, sentryIssuesForSession, type ErrorTrackerIssue } from './sentry.js';

/**
 * The error-tracker issues linked to a session (spec: `{configured: false, issues: []}` without a connection, at
 * most 25 otherwise). The tracker is the org's Sentry OAuth connection, whose access token is refreshed when it
 * expires or Sentry answers 401 (decision 0018). A provider that cannot be reached or refuses the token, or a
 * connection that must be authorized again, does not fail the session view: the answer is `configured: true`, no
 * issues, and an `error` token saying why (documented in OpenAPI).
 */
export type ErrorIssuesError = 'unreachable' | 'unauthorized' | 'bad-response' | 'reauthorization-required';
export type ErrorIssuesAnswer =
  | { readonly configured: false; readonly issues: readonly [] }
  | { readonly configured: true; readonly issues: readonly ErrorTrackerIssue[]; readonly error?: ErrorIssuesError };

export async function errorIssuesForSession(
  deps: Pick<Deps, 'db' | 'secrets' | 'config' | 'log' | 'clock' | 'services'>, orgId: string, sessionId: string,
): Promise<ErrorIssuesAnswer> {
  const guard = deps.services.outbound;
  try {
    const found = await withConnectionToken(deps, orgId, 'sentry', async (accessToken) => {
      try {
        return await sentryIssuesForSession(guard, { baseUrl: deps.config.sentryOAuthBaseUrl, accessToken, sessionId });
      } catch (err) {
        if (err instanceof ErrorTrackerUnavailable && err.status === 401) throw new AccessTokenRejected();
        throw err;
      }
    });
    if (!found.connected) return { configured: false, issues: [] };
    return { configured: true, issues: found.value };
  } catch (err) {
    if (err instanceof ConnectionUnusable) return { configured: true, issues: [], error: err.reason };
    if (!(err instanceof ErrorTrackerUnavailable)) throw err;
    deps.log.warn({ orgId, reason: err.reason }, 'error-tracker lookup failed');
    return { configured: true, issues: [], error: err.reason };
  }
}
