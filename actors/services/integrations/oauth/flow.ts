import { createHash, randomBytes } from 'node:crypto';
import type { Deps } from '../../deps.js';
import { TroupeError } from '../../../../ops/kernel/errors.js';
import { appendAudit } from '../../../../storage/audit-log.js';
import { consumeAuthorizationState, insertAuthorizationState, upsertOAuthConnection } from '../../../../storage/integrations/oauth.js';
import { oauthAppFor, type OAuthApp, type OAuthProvider } from './providers.js';
import { exchangeAuthorizationCode, expiresAtOf } from './token-exchange.js';

/**
 * Connecting an org to a provider (CONTRACT "Integration OAuth"): authorization code with PKCE S256 (RFC 6749
 * §4.1, RFC 7636). The `state` is 32 random bytes, stored only as its SHA-256 and bound to org, user and provider;
 * it lives ten minutes and is consumed by the first callback that presents it from the same org and user, whatever
 * that callback's outcome, so a state never works twice. The PKCE verifier never leaves the server (sealed in the
 * state row); only its S256 challenge goes to the browser. The tokens the provider returns are sealed with the
 * master key under `<orgId>:oauth:<provider>`.
 */
export const AUTHORIZATION_STATE_TTL_MS = 10 * 60 * 1000;

type FlowDeps = Pick<Deps, 'config' | 'db' | 'secrets' | 'clock' | 'log' | 'services'>;

export const hashState = (state: string): string => createHash('sha256').update(state, 'utf8').digest('hex');
export const connectionSealContext = (orgId: string, provider: string): string => `${orgId}:oauth:${provider}`;
const verifierSealContext = (orgId: string, provider: string): string => `${orgId}:oauth-verifier:${provider}`;

function configuredApp(deps: FlowDeps, provider: OAuthProvider): OAuthApp {
  const app = oauthAppFor(deps.config, provider);
  if (!app) throw new TroupeError('CONFLICT', `${provider} OAuth is not configured on this deployment`);
  return app;
}

export interface AuthorizationStart {
  readonly authorizeUrl: string;
  readonly state: string;
  readonly expiresAt: string;
}

export async function beginAuthorization(
  deps: FlowDeps, input: { orgId: string; userId: string; provider: OAuthProvider; redirectUri: string },
): Promise<AuthorizationStart> {
  const app = configuredApp(deps, input.provider);
  const state = randomBytes(32).toString('base64url');
  // 32 random bytes → 43 base64url characters: the shortest verifier RFC 7636 §4.1 allows, with 256 bits in it.
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier, 'ascii').digest('base64url');
  const now = deps.clock.now();
  const expiresAt = new Date(now + AUTHORIZATION_STATE_TTL_MS);
  await insertAuthorizationState(deps.db, hashState(state), {
    orgId: input.orgId, userId: input.userId, provider: input.provider, redirectUri: input.redirectUri, expiresAt,
    sealedVerifier: deps.secrets.seal(verifier, verifierSealContext(input.orgId, input.provider)),
  }, new Date(now));
  const url = new URL(app.authorizeUrl);
  url.search = new URLSearchParams({
    response_type: 'code', client_id: app.clientId, redirect_uri: input.redirectUri, scope: app.scope, state,
    code_challenge: challenge, code_challenge_method: 'S256',
  }).toString();
  return { authorizeUrl: url.toString(), state, expiresAt: expiresAt.toISOString() };
}

export interface ConnectionResult {
  readonly provider: OAuthProvider;
  readonly connected: true;
  readonly scope: string | null;
  readonly expiresAt: string | null;
  readonly connectedAt: string;
}

export async function completeAuthorization(
  deps: FlowDeps,
  input: { orgId: string; userId: string; provider: OAuthProvider; state: string; code: string | undefined; providerError: string | undefined },
): Promise<ConnectionResult> {
  const app = configuredApp(deps, input.provider);
  const pending = await consumeAuthorizationState(deps.db, hashState(input.state), input);
  // One answer for unknown, used, and another org's or user's state: which of them it was is nobody's business.
  if (!pending) throw new TroupeError('VALIDATION_FAILED', 'state: unknown, already used, or issued to someone else', { field: 'state' });
  if (pending.expiresAt.getTime() <= deps.clock.now()) throw new TroupeError('VALIDATION_FAILED', 'state: expired; start the connection again', { field: 'state' });
  if (input.providerError !== undefined) {
    throw new TroupeError('VALIDATION_FAILED', `${input.provider} did not authorize the connection: ${input.providerError}`, { field: 'error', providerError: input.providerError });
  }
  if (input.code === undefined) throw new TroupeError('VALIDATION_FAILED', 'code: required', { field: 'code' });

  const codeVerifier = deps.secrets.open(pending.sealedVerifier, verifierSealContext(input.orgId, input.provider));
  const tokens = await exchangeAuthorizationCode(deps.services.outbound, app, { code: input.code, redirectUri: pending.redirectUri, codeVerifier });

  const now = new Date(deps.clock.now());
  const expiresAt = expiresAtOf(tokens, now.getTime());
  const scope = typeof tokens.scope === 'string' ? tokens.scope.slice(0, 1000) : null;
  await deps.db.transaction(async (trx) => {
    await upsertOAuthConnection(trx, {
      orgId: input.orgId, provider: input.provider, scope, expiresAt, connectedBy: input.userId, at: now,
      sealedTokens: deps.secrets.seal(JSON.stringify(tokens), connectionSealContext(input.orgId, input.provider)),
    });
    await appendAudit(trx, {
      orgId: input.orgId, type: 'integration.oauth_connected', actor: `user:${input.userId}`, subject: input.provider, payload: { scope }, at: now,
    });
  });
  return { provider: input.provider, connected: true, scope, expiresAt: expiresAt?.toISOString() ?? null, connectedAt: now.toISOString() };
}
