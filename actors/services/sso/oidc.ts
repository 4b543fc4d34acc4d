import * as oidc from 'openid-client';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { OutboundRefused, type OutboundGuard } from '../integrations/outbound/index.js';

/**
 * The relying party's side of OpenID Connect (authorization code with PKCE, `state` and `nonce`), on openid-client
 * (decision 0083). Every request to a provider goes through the node's outbound guard (decision 0015): an issuer
 * at a private or loopback address is reached only when the operator allowed it (`TROUPE_OUTBOUND_ALLOW`), and the
 * socket connects to the address that was checked.
 */
export interface ProviderSettings {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
}

/** What the callback must find again: kept server-side, sealed, for the one sign-in it belongs to. */
export interface SignInChecks {
  readonly codeVerifier: string;
  readonly nonce: string;
}

const DISCOVERY_TTL_MS = 5 * 60 * 1000;
const DISCOVERY_ENTRIES = 256;
const REQUEST_TIMEOUT_MS = 10_000;

/** openid-client's fetch, answered by the outbound guard; redirects are not followed, as openid-client asks. */
export function guardedFetch(guard: OutboundGuard): oidc.CustomFetch {
  return async (url, options) => {
    const body = options.body;
    let payload: string | Buffer | undefined;
    if (body === undefined || body === null) payload = undefined;
    else if (typeof body === 'string') payload = body;
    else if (body instanceof URLSearchParams) payload = body.toString();
    else if (body instanceof Uint8Array) payload = Buffer.from(body);
    else if (body instanceof ArrayBuffer) payload = Buffer.from(body);
    else throw new TypeError('a streamed request body is not sent to an OpenID provider');
    const method = options.method.toUpperCase();
    if (method !== 'GET' && method !== 'POST') throw new TypeError(`method ${method} is not sent to an OpenID provider`);
    const answer = await guard.request(url, { method, headers: options.headers, ...(payload === undefined ? {} : { body: payload }), timeoutMs: REQUEST_TIMEOUT_MS, maxRedirects: 0 });
    return new Response(answer.status === 204 || answer.status === 304 ? null : new Uint8Array(answer.body), { status: answer.status, headers: answer.headers });
  };
}

/**
 * Discovered provider configurations, reused for a few minutes so a sign-in costs the provider's token call and not
 * a discovery each time. Keyed by everything the configuration is made of (a changed setting is a new key).
 */
const discovered = new Map<string, { readonly config: Promise<oidc.Configuration>; readonly until: number }>();

export function providerConfiguration(guard: OutboundGuard, settings: ProviderSettings, version: string, now: number): Promise<oidc.Configuration> {
  const key = JSON.stringify([settings.issuer, settings.clientId, version]);
  const hit = discovered.get(key);
  if (hit && hit.until > now) return hit.config;
  if (discovered.size >= DISCOVERY_ENTRIES) discovered.delete(discovered.keys().next().value!);
  const config = discover(guard, settings);
  discovered.set(key, { config, until: now + DISCOVERY_TTL_MS });
  // A failed discovery is not kept: the next sign-in tries again.
  config.catch(() => discovered.delete(key));
  return config;
}

async function discover(guard: OutboundGuard, settings: ProviderSettings): Promise<oidc.Configuration> {
  const issuer = new URL(settings.issuer);
  try {
    return await oidc.discovery(issuer, settings.clientId, { client_secret: settings.clientSecret }, oidc.ClientSecretPost(settings.clientSecret), {
      [oidc.customFetch]: guardedFetch(guard),
      // Plain http is allowed only for a loopback issuer, which the settings route already checked.
      ...(issuer.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
      timeout: REQUEST_TIMEOUT_MS / 1000,
    });
  } catch (err) {
    throw new TroupeError('UPSTREAM_FAILED', `the org's OpenID provider could not be discovered at ${settings.issuer}: ${reasonOf(err)}`);
  }
}

export async function authorizationRequest(config: oidc.Configuration, redirectUri: string, state: string, loginHint: string): Promise<{ url: string; checks: SignInChecks }> {
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri, response_type: 'code', scope: 'openid email profile', state, nonce, login_hint: loginHint,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier), code_challenge_method: 'S256',
  });
  return { url: url.href, checks: { codeVerifier, nonce } };
}

/**
 * Exchanges the callback's code and verifies the ID token: the authorization response's `state` (and `iss`, when the
 * provider sends it), then the token's issuer, audience, nonce and lifetime. Any refusal is 401 with the reason; a
 * provider that cannot be reached is 502.
 */
export async function redeemCode(
  config: oidc.Configuration, callbackUrl: URL, expected: { state: string; checks: SignInChecks },
): Promise<Readonly<Record<string, unknown>>> {
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
  try {
    tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      expectedState: expected.state, expectedNonce: expected.checks.nonce, pkceCodeVerifier: expected.checks.codeVerifier, idTokenExpected: true,
    });
  } catch (err) {
    if (isUnreachable(err)) throw new TroupeError('UPSTREAM_FAILED', `the org's OpenID provider did not answer: ${reasonOf(err)}`);
    throw new TroupeError('AUTH_INVALID', `single sign-on refused: ${reasonOf(err)}`);
  }
  const claims = tokens.claims();
  if (!claims) throw new TroupeError('AUTH_INVALID', 'single sign-on refused: the provider returned no ID token');
  return claims;
}

function isUnreachable(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof OutboundRefused) return true;
  }
  return false;
}

/** The words of an error and its causes, short, with the first code any of them carries: what the audit entry and the person are told. */
function reasonOf(err: unknown): string {
  const words: string[] = [];
  let code: string | undefined;
  for (let e: unknown = err; e instanceof Error && words.length < 3; e = e.cause) {
    if (!words.includes(e.message)) words.push(e.message);
    const own = (e as { error?: unknown }).error ?? (e as { code?: unknown }).code;
    if (code === undefined && typeof own === 'string') code = own;
  }
  const text = words.join(': ') || String(err);
  return (code === undefined ? text : `${text} (${code})`).slice(0, 300);
}
