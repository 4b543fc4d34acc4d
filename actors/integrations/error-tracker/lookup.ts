import type { Deps } from '../../../ops/deps.js';
import { findOAuthConnection } from '../../../storage/integrations/oauth.js';
import { connectionSealContext } from '../oauth/flow.js';
import { outboundGuardFor } from '../outbound/for-deps.js';
import { ErrorTrackerUnavailable, sentryIssuesForSession, type ErrorTrackerIssue } from './sentry.js';

/**
 * The error-tracker issues linked to a session (spec: `{configured: false, issues: []}` without a connection, at
 * most 25 otherwise). The tracker is the org's Sentry OAuth connection; its sealed access token is opened only
 * here, for the one request. A provider that cannot be reached or refuses the token does not fail the session
 * view: the answer is `configured: true`, no issues, and an `error` token saying why (documented in OpenAPI).
 */
export type ErrorIssuesAnswer =
  | { readonly configured: false; readonly issues: readonly [] }
  | { readonly configured: true; readonly issues: readonly ErrorTrackerIssue[]; readonly error?: 'unreachable' | 'unauthorized' | 'bad-response' };

export async function errorIssuesForSession(
  deps: Pick<Deps, 'db' | 'secrets' | 'config' | 'log'>, orgId: string, sessionId: string,
): Promise<ErrorIssuesAnswer> {
  const connection = await findOAuthConnection(deps.db, orgId, 'sentry');
  if (!connection) return { configured: false, issues: [] };
  let accessToken: unknown;
  try {
    accessToken = (JSON.parse(deps.secrets.open(connection.sealedTokens, connectionSealContext(orgId, 'sentry'))) as Record<string, unknown>).access_token;
  } catch (err) {
    deps.log.error({ err, orgId }, 'the sentry connection tokens could not be opened (master key changed?)');
    return { configured: true, issues: [], error: 'unauthorized' };
  }
  if (typeof accessToken !== 'string' || accessToken === '') return { configured: true, issues: [], error: 'unauthorized' };
  try {
    const issues = await sentryIssuesForSession(outboundGuardFor(deps.config), { baseUrl: deps.config.sentryOAuthBaseUrl, accessToken, sessionId });
    return { configured: true, issues };
  } catch (err) {
    if (!(err instanceof ErrorTrackerUnavailable)) throw err;
    deps.log.warn({ orgId, reason: err.reason }, 'error-tracker lookup failed');
    return { configured: true, issues: [], error: err.reason };
  }
}
