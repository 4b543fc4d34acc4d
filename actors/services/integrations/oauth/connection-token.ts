import type { Deps } from '../../deps.js';
import { TroupeError } from '../../../../ops/kernel/errors.js';
import { appendAudit } from '../../../../storage/audit-log.js';
import {
  findOAuthConnection, markReauthorizationRequired, storeRefreshedTokens, type OAuthConnection,
} from '../../../../storage/integrations/oauth.js';
import { connectionSealContext } from './flow.js';
import { oauthAppFor, type OAuthProvider } from './providers.js';
import { expiresAtOf, refreshAccessToken, TokenGrantRefused, type TokenResponse } from './token-exchange.js';

/**
 * The access token of an org's provider connection, refreshed when it is about to expire or the provider refused it
 * (RFC 6749 §6, decision 0018). A node refreshes a connection once however many requests need it at the same time
 * (single flight per connection and node); across nodes the refreshed tokens are stored only over the version that
 * was read (compare-and-set), and the loser uses the winner's tokens, so a rotated refresh token is never lost.
 * A refused refresh (`invalid_grant`), or none to use, marks the connection for re-authorization: lookups stop
 * calling the provider until a user connects again.
 */
export const REFRESH_AHEAD_MS = 60_000;

export type ConnectionProblem = 'reauthorization-required' | 'unauthorized' | 'unreachable';

/** The connection exists but gives no usable token now; `reason` is what the caller may tell its client. */
export class ConnectionUnusable extends Error {
  constructor(readonly reason: ConnectionProblem) {
    super(`provider connection unusable: ${reason}`);
    this.name = 'ConnectionUnusable';
  }
}

/** What a `use` callback throws when the provider answered 401 to the access token. */
export class AccessTokenRejected extends Error {
  constructor() {
    super('the provider rejected the access token');
    this.name = 'AccessTokenRejected';
  }
}

type TokenDeps = Pick<Deps, 'config' | 'db' | 'secrets' | 'clock' | 'log' | 'services'>;
interface UsableToken { readonly accessToken: string; readonly version: number }
type Trigger = 'expiring' | 'rejected';

/** This node's refreshes under way, one per connection (`deps.services.connectionTokens`). */
export class ConnectionTokenRefreshes {
  private readonly flights = new Map<string, Promise<UsableToken>>();

  /** Joins the refresh of this connection under way, or starts one with `run`. */
  once(key: string, run: () => Promise<UsableToken>): Promise<UsableToken> {
    const joined = this.flights.get(key);
    if (joined) return joined;
    const flight = run().finally(() => this.flights.delete(key));
    this.flights.set(key, flight);
    return flight;
  }
}

/**
 * Runs `use` with the connection's access token; once more with a refreshed one if `use` throws
 * AccessTokenRejected. `connected: false` when the org has no connection to the provider; throws ConnectionUnusable.
 */
export async function withConnectionToken<T>(
  deps: TokenDeps, orgId: string, provider: OAuthProvider, use: (accessToken: string) => Promise<T>,
): Promise<{ connected: false } | { connected: true; value: T }> {
  const token = await currentToken(deps, orgId, provider);
  if (!token) return { connected: false };
  try {
    return { connected: true, value: await use(token.accessToken) };
  } catch (err) {
    if (!(err instanceof AccessTokenRejected)) throw err;
  }
  const renewed = await refreshOnce(deps, orgId, provider, token.version, 'rejected');
  try {
    return { connected: true, value: await use(renewed.accessToken) };
  } catch (err) {
    // A token the provider issued a moment ago and refuses: a permission problem, not an expiry; refreshing again
    // would not help.
    if (err instanceof AccessTokenRejected) throw new ConnectionUnusable('unauthorized');
    throw err;
  }
}

async function currentToken(deps: TokenDeps, orgId: string, provider: OAuthProvider): Promise<UsableToken | undefined> {
  const row = await findOAuthConnection(deps.db, orgId, provider);
  if (!row) return undefined;
  if (row.status !== 'connected') throw new ConnectionUnusable('reauthorization-required');
  const tokens = openTokens(deps, row);
  const expiresAt = row.expiresAt === null ? undefined : Date.parse(row.expiresAt);
  if (expiresAt === undefined || expiresAt - deps.clock.now() > REFRESH_AHEAD_MS) return { accessToken: tokens.access_token, version: row.tokenVersion };
  return refreshOnce(deps, orgId, provider, row.tokenVersion, 'expiring');
}

function refreshOnce(deps: TokenDeps, orgId: string, provider: OAuthProvider, readVersion: number, trigger: Trigger): Promise<UsableToken> {
  return deps.services.connectionTokens.once(`${orgId}:${provider}`, () => refresh(deps, orgId, provider, readVersion, trigger));
}

async function refresh(deps: TokenDeps, orgId: string, provider: OAuthProvider, readVersion: number, trigger: Trigger): Promise<UsableToken> {
  // Read again inside the flight: a caller that read the row before the previous flight stored its tokens must not
  // refresh a second time.
  const row = await findOAuthConnection(deps.db, orgId, provider);
  if (!row || row.status !== 'connected') throw new ConnectionUnusable('reauthorization-required');
  const tokens = openTokens(deps, row);
  const current = { accessToken: tokens.access_token, version: row.tokenVersion };
  if (row.tokenVersion !== readVersion) return current;
  const stillValid = trigger === 'expiring' && row.expiresAt !== null && Date.parse(row.expiresAt) > deps.clock.now();
  // A refresh that could not happen is harmless while the token we hold still works.
  const currentOr = (problem: ConnectionProblem): UsableToken => {
    if (stillValid) return current;
    throw new ConnectionUnusable(problem);
  };
  const refreshToken = typeof tokens.refresh_token === 'string' && tokens.refresh_token !== '' ? tokens.refresh_token : undefined;
  if (refreshToken === undefined) {
    if (stillValid) return current;
    return requireReauthorization(deps, row, provider, 'no_refresh_token');
  }
  const app = oauthAppFor(deps.config, provider);
  if (!app) {
    // The deployment lost its client credentials: the user's grant may be fine, so it is not marked.
    deps.log.warn({ orgId, provider }, 'an OAuth connection needs a refresh but the provider app is not configured');
    return currentOr('unauthorized');
  }

  let fresh: TokenResponse;
  try {
    fresh = await refreshAccessToken(deps.services.outbound, app, refreshToken);
  } catch (err) {
    if (err instanceof TokenGrantRefused && err.providerError === 'invalid_grant') {
      // Another node may have used, and the provider rotated, this refresh token a moment ago: the mark applies only
      // to the tokens we read, and a refresh of them that succeeded elsewhere clears it.
      return requireReauthorization(deps, row, provider, 'invalid_grant');
    }
    if (err instanceof TokenGrantRefused) {
      // invalid_client, unauthorized_client…: about this deployment's app, which a user reconnecting cannot fix.
      deps.log.warn({ orgId, provider, providerError: err.providerError }, 'the provider refused to refresh an OAuth connection');
      return currentOr('unauthorized');
    }
    if (err instanceof TroupeError && err.code === 'UPSTREAM_FAILED') {
      deps.log.warn({ orgId, provider, err: err.message }, 'the provider token endpoint failed during a refresh');
      return currentOr('unreachable');
    }
    throw err;
  }

  const at = new Date(deps.clock.now());
  // RFC 6749 §6: a provider that does not rotate answers without a refresh token, and the old one stays valid.
  const kept: TokenResponse = { ...fresh, refresh_token: typeof fresh.refresh_token === 'string' && fresh.refresh_token !== '' ? fresh.refresh_token : refreshToken };
  const stored = await storeRefreshedTokens(deps.db, {
    orgId, provider, readVersion, at, expiresAt: expiresAtOf(fresh, at.getTime()),
    scope: typeof fresh.scope === 'string' ? fresh.scope.slice(0, 1000) : row.scope,
    sealedTokens: deps.secrets.seal(JSON.stringify(kept), connectionSealContext(orgId, provider)),
  });
  if (stored) return { accessToken: fresh.access_token, version: readVersion + 1 };
  deps.log.info({ orgId, provider }, 'another node refreshed (or a user reconnected) this OAuth connection first; using its tokens');
  const winner = await replacedSince(deps, orgId, provider, readVersion);
  if (!winner) throw new ConnectionUnusable('reauthorization-required');
  return winner;
}

/** The stored tokens if someone replaced those of `readVersion` and they are usable. */
async function replacedSince(deps: TokenDeps, orgId: string, provider: OAuthProvider, readVersion: number): Promise<UsableToken | undefined> {
  const row = await findOAuthConnection(deps.db, orgId, provider);
  if (!row || row.status !== 'connected' || row.tokenVersion === readVersion) return undefined;
  return { accessToken: openTokens(deps, row).access_token, version: row.tokenVersion };
}

async function requireReauthorization(
  deps: TokenDeps, row: OAuthConnection, provider: OAuthProvider, reason: 'invalid_grant' | 'no_refresh_token',
): Promise<UsableToken> {
  const at = new Date(deps.clock.now());
  const marked = await deps.db.transaction(async (trx) => {
    if (!await markReauthorizationRequired(trx, { orgId: row.orgId, provider, readVersion: row.tokenVersion, at })) return false;
    await appendAudit(trx, {
      orgId: row.orgId, type: 'integration.oauth_reauthorization_required', actor: `provider:${provider}`, subject: provider, payload: { reason }, at,
    });
    return true;
  });
  if (marked) deps.log.warn({ orgId: row.orgId, provider, reason }, 'an OAuth connection needs to be authorized again');
  else {
    // Tokens replaced while we asked: a refresh elsewhere or a reconnection won, and its tokens are the ones to use.
    const winner = await replacedSince(deps, row.orgId, provider, row.tokenVersion);
    if (winner) return winner;
  }
  throw new ConnectionUnusable('reauthorization-required');
}

function openTokens(deps: TokenDeps, row: OAuthConnection): TokenResponse & { access_token: string } {
  let tokens: unknown;
  try {
    tokens = JSON.parse(deps.secrets.open(row.sealedTokens, connectionSealContext(row.orgId, row.provider)));
  } catch (err) {
    deps.log.error({ err, orgId: row.orgId, provider: row.provider }, 'OAuth connection tokens could not be opened (master key changed?)');
    throw new ConnectionUnusable('unauthorized');
  }
  const fields = (typeof tokens === 'object' && tokens !== null ? tokens : {}) as Record<string, unknown>;
  if (typeof fields.access_token !== 'string' || fields.access_token === '') throw new ConnectionUnusable('unauthorized');
  return fields as TokenResponse & { access_token: string };
}
