import { TroupeError } from '../../../ops/errors.js';
import type { OutboundGuard } from '../outbound/index.js';
import { OutboundRefused } from '../outbound/index.js';
import type { OAuthApp } from './providers.js';

/**
 * The authorization-code exchange (RFC 6749 §4.1.3, RFC 7636 §4.5) at the provider's token endpoint, through the
 * outbound guard like every request Troupe makes. Client authentication is in the body (`client_secret_post`):
 * GitHub accepts nothing else, Linear and Sentry accept it. `Accept: application/json`, because GitHub otherwise
 * answers form-encoded. GitHub also reports errors with a 200 and an `error` member, so `error` is checked on
 * every answer, not only on 4xx.
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

export async function exchangeAuthorizationCode(
  guard: OutboundGuard, app: OAuthApp, grant: { code: string; redirectUri: string; codeVerifier: string },
): Promise<TokenResponse> {
  const form = new URLSearchParams({
    grant_type: 'authorization_code', code: grant.code, redirect_uri: grant.redirectUri, code_verifier: grant.codeVerifier,
    client_id: app.clientId, client_secret: app.clientSecret,
  });
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
    // An error the provider names is about the grant we relayed (a used, expired or forged code): the caller's
    // request cannot succeed as sent. Only the RFC's short error token is repeated, never free text.
    const token = /^[\x20-\x7e]{1,64}$/.test(fields.error) ? fields.error : 'error';
    throw new TroupeError('VALIDATION_FAILED', `${app.provider} refused the authorization code: ${token}`, { field: 'code', providerError: token });
  }
  if (res.status < 200 || res.status >= 300) throw new TroupeError('UPSTREAM_FAILED', `the ${app.provider} token endpoint answered ${res.status}`);
  if (typeof fields.access_token !== 'string' || fields.access_token === '') {
    throw new TroupeError('UPSTREAM_FAILED', `the ${app.provider} token endpoint answered without an access token`);
  }
  return fields as TokenResponse;
}
