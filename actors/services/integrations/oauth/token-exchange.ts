import { TroupeError } from '../../../../ops/kernel/errors.js';
import type { OutboundGuard } from '../outbound/index.js';
import { OutboundRefused } from '../outbound/index.js';
import type { OAuthApp } from './providers.js';

/**
 * The provider's token endpoint, through the outbound guard like every request Troupe makes: the authorization-code
 * exchange (RFC 6749 §4.1.3, RFC 7636 §4.5) and the refresh (RFC 6749 §6). Client authentication is in the body
 * (`client_secret_post`): GitHub accepts nothing else, Linear and Sentry accept it. `Accept: application/json`,
 * because GitHub otherwise answers form-encoded. GitHub also reports errors with a 200 and an `error` member, so
 * `error` is checked on every answer, not only on 4xx.
 */
const TOKEN_TIMEOUT_MS = 10_000;
const TOKEN_MAX_BYTES = 64 * 1024;

export interface TokenResponse {
  readonly access_token: string;
  readonly token_type?: string;
  readonly refresh_token?: string;
  readonly expires_in?: number;
  readonly scope?: string;
  readonly [extra: string]: unknown;
}

/** The provider named an RFC 6749 §5.2 error (`invalid_grant`, `invalid_client`…) for the grant we presented. */
export class TokenGrantRefused extends Error {
  constructor(readonly providerError: string) {
    super(`token grant refused: ${providerError}`);
    this.name = 'TokenGrantRefused';
  }
}

/** Throws TokenGrantRefused for a named refusal, TroupeError UPSTREAM_FAILED when the endpoint failed otherwise. */
async function requestTokens(guard: OutboundGuard, app: OAuthApp, grant: Record<string, string>): Promise<TokenResponse> {
  const form = new URLSearchParams({ ...grant, client_id: app.clientId, client_secret: app.clientSecret });
  let res;
  try {
    res = await guard.request(app.tokenUrl, {
      method: 'POST', body: form.toString(), timeoutMs: TOKEN_TIMEOUT_MS, maxBytes: TOKEN_MAX_BYTES, maxRedirects: 0,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    });
  } catch (err) {
    if (err instanceof OutboundRefused) throw new TroupeError('UPSTREAM_FAILED', `the ${app.provider} token endpoint could not be reached (${err.reason})`);
    throw err;
  }
  let body: unknown;
  try {
    body = JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new TroupeError('UPSTREAM_FAILED', `the ${app.provider} token endpoint answered ${res.status} without JSON`);
  }
  const fields = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  if (typeof fields.error === 'string') {
    // Only the RFC's short error token is repeated, never the provider's free text.
    throw new TokenGrantRefused(/^[\x20-\x7e]{1,64}$/.test(fields.error) ? fields.error : 'error');
  }
  if (res.status < 200 || res.status >= 300) throw new TroupeError('UPSTREAM_FAILED', `the ${app.provider} token endpoint answered ${res.status}`);
  if (typeof fields.access_token !== 'string' || fields.access_token === '') {
    throw new TroupeError('UPSTREAM_FAILED', `the ${app.provider} token endpoint answered without an access token`);
  }
  return fields as TokenResponse;
}

export async function exchangeAuthorizationCode(
  guard: OutboundGuard, app: OAuthApp, grant: { code: string; redirectUri: string; codeVerifier: string },
): Promise<TokenResponse> {
  try {
    return await requestTokens(guard, app, {
      grant_type: 'authorization_code', code: grant.code, redirect_uri: grant.redirectUri, code_verifier: grant.codeVerifier,
    });
  } catch (err) {
    // A refusal here is about the grant the caller relayed (a used, expired or forged code): their request cannot
    // succeed as sent.
    if (!(err instanceof TokenGrantRefused)) throw err;
    throw new TroupeError('VALIDATION_FAILED', `${app.provider} refused the authorization code: ${err.providerError}`, { field: 'code', providerError: err.providerError });
  }
}

/**
 * RFC 6749 §6. No `scope`: the refreshed grant keeps the scope the user consented to. Throws TokenGrantRefused
 * (`invalid_grant`: the refresh token was revoked, expired or already used) or TroupeError UPSTREAM_FAILED.
 */
export function refreshAccessToken(guard: OutboundGuard, app: OAuthApp, refreshToken: string): Promise<TokenResponse> {
  return requestTokens(guard, app, { grant_type: 'refresh_token', refresh_token: refreshToken });
}

/**
 * Longest lifetime taken from `expires_in`: a provider's junk (1e300) would otherwise make an invalid Date that the
 * database refuses, and a token claimed to live longer than this is simply refreshed sooner than needed.
 */
const MAX_EXPIRES_IN_SECONDS = 10 * 366 * 86_400;

/** `expires_in` (seconds from the answer) as an instant; null when the provider gave none (the token does not expire). */
export function expiresAtOf(tokens: TokenResponse, answeredAtMs: number): Date | null {
  const seconds = tokens.expires_in;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) return null;
  return new Date(answeredAtMs + Math.min(seconds, MAX_EXPIRES_IN_SECONDS) * 1000);
}
