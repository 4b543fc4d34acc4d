import { createHash, randomBytes } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { readCookie } from '../../actors/services/identity/authenticator.js';
import { tags } from '../../actors/services/identity/revocation.js';
import { authorizationRequest, providerConfiguration, redeemCode, type SignInChecks } from '../../actors/services/sso/oidc.js';
import { groupsOf, mappedRole, roleAtSignIn } from '../../actors/services/sso/roles.js';
import { readOrgSso, ssoForDomain, type OrgSso } from '../../storage/identity/sso.js';
import { consumeSignInState, insertSignInState, type PendingSignIn } from '../../storage/identity/sso-login-states.js';
import { signInSsoMember, type SsoProfile } from '../../storage/identity/sso-members.js';
import { route } from '../route.js';
import type { HttpRequest, Reply, Route } from '../types.js';
import { announceRevocation } from './announce-revocation.js';
import { auditTrail } from './audit-trail.js';
import { sessionCookie, userToken } from './login.js';
import { CALLBACK_PATH, clientSecretSealContext, ssoRedirectUri } from './sso-common.js';
import { ssoCallbackQuery, ssoStartBody, ssoStartReply } from './sso-schemas.js';

/**
 * Signing in at the org's OpenID provider (issue 37 §1, decision 0083). `POST /api/auth/oidc/start {email}` finds
 * the org that claimed the email's domain and answers the provider's authorization URL (authorization code with
 * PKCE, `state`, `nonce`); the `state` is 32 random bytes kept only as a hash, bound to the browser that started
 * by a second random value in the `troupe_oidc` cookie, and the verifier and nonce stay sealed on the server.
 * `GET /auth/oidc/callback` consumes that state once, redeems the code and verifies the ID token (openid-client:
 * issuer, audience, nonce, lifetime), provisions the person, sets their role from the groups claim, and sets the
 * same `troupe_session` cookie as a password sign-in before sending the browser on. Sign-ins, provisioning, role
 * changes and refusals are in the org's audit chain.
 */
export const SIGN_IN_STATE_TTL_MS = 10 * 60 * 1000;
const BROWSER_COOKIE = 'troupe_oidc';

const sha256 = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');
const checksSealContext = (orgId: string): string => `${orgId}:sso:sign-in-checks`;

/**
 * Only a path on this node, never `//host` or a scheme: the callback must not become an open redirect. Printable
 * ASCII only (a console path is), as it goes into a header.
 */
function safeNext(next: string | undefined): string {
  if (next === undefined || !next.startsWith('/') || next.startsWith('//') || /[^\x21-\x7e]|\\/.test(next)) return '/';
  return next;
}

function browserCookie(deps: Deps, value: string, maxAgeSeconds: number): string {
  // Lax: the provider's redirect back is a top-level GET, which carries it; only the callback path ever receives it.
  return `${BROWSER_COOKIE}=${value}; HttpOnly; SameSite=Lax; Path=${CALLBACK_PATH}; Max-Age=${maxAgeSeconds}${deps.config.behindTls ? '; Secure' : ''}`;
}

function providerOf(deps: Deps, sso: OrgSso) {
  const settings = { issuer: sso.issuer, clientId: sso.clientId, clientSecret: deps.secrets.open(sso.sealedClientSecret, clientSecretSealContext(sso.orgId)) };
  return providerConfiguration(deps.services.outbound, settings, sso.updatedAt, deps.clock.now());
}

async function start(req: HttpRequest<{ email: string; next?: string }>, deps: Deps): Promise<Reply> {
  // Unauthenticated, and each start costs a lookup and may cost a provider's discovery: counted per source address
  // (decision 0091), whether or not the domain has single sign-on, so the answer cannot be probed faster either.
  await deps.services.rateLimits.ssoStartsBySource.consume(req.clientAddress());
  const email = req.body.email.trim().toLowerCase();
  const domain = email.slice(email.lastIndexOf('@') + 1);
  const sso = await ssoForDomain(deps.db, domain);
  if (!sso) return { body: { sso: false }, headers: { 'cache-control': 'no-store' } };
  const config = await providerOf(deps, sso);
  const redirectUri = ssoRedirectUri(req, deps);
  const state = randomBytes(32).toString('base64url');
  const browser = randomBytes(32).toString('base64url');
  const { url, checks } = await authorizationRequest(config, redirectUri, state, email);
  const now = deps.clock.now();
  const expiresAt = new Date(now + SIGN_IN_STATE_TTL_MS);
  await insertSignInState(deps.db, sha256(state), sha256(browser), {
    orgId: sso.orgId, sealedChecks: deps.secrets.seal(JSON.stringify(checks), checksSealContext(sso.orgId)),
    redirectUri, nextPath: safeNext(req.body.next), expiresAt,
  }, new Date(now));
  return {
    body: { sso: true, authorizationUrl: url, expiresAt: expiresAt.toISOString() },
    headers: { 'set-cookie': browserCookie(deps, browser, SIGN_IN_STATE_TTL_MS / 1000), 'cache-control': 'no-store' },
  };
}

/** The pending sign-in the callback names, taken out so it never works twice; one answer for every way it is not there. */
async function pendingSignIn(req: HttpRequest, deps: Deps, state: string): Promise<PendingSignIn> {
  const browser = req.headers.cookie === undefined ? undefined : readCookie(req.headers.cookie, BROWSER_COOKIE);
  const pending = browser === undefined ? undefined : await consumeSignInState(deps.db, sha256(state), sha256(browser));
  if (!pending) throw new TroupeError('VALIDATION_FAILED', 'state: unknown, already used, or started in another browser; sign in again', { field: 'state' });
  if (pending.expiresAt.getTime() <= deps.clock.now()) throw new TroupeError('VALIDATION_FAILED', 'state: expired; sign in again', { field: 'state' });
  return pending;
}

function profileOf(claims: Readonly<Record<string, unknown>>, sso: OrgSso): SsoProfile {
  const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : undefined;
  if (email === undefined || !/^[^@\s]+@[^@\s]+$/.test(email) || email.length > 254) {
    throw new TroupeError('AUTH_FORBIDDEN', 'the ID token carries no email; ask the provider for the email scope');
  }
  // Only an email the provider says it verified links to an account: an editable or unverified email could be anyone's.
  if (claims.email_verified !== true) throw new TroupeError('AUTH_FORBIDDEN', 'the provider does not say this email is verified');
  // The provider vouches only for the domains the org proved it holds: an email elsewhere could be another org's person.
  if (!sso.verifiedDomains.includes(email.slice(email.lastIndexOf('@') + 1))) {
    throw new TroupeError('AUTH_FORBIDDEN', "the ID token's email is not in one of the org's verified single sign-on domains");
  }
  const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 100) : undefined);
  const picture = typeof claims.picture === 'string' && /^https?:\/\//i.test(claims.picture) && claims.picture.length <= 2048 ? claims.picture : undefined;
  return { email, firstName: text(claims.given_name) ?? text(claims.name), lastName: text(claims.family_name), profilePictureUrl: picture };
}

async function callback(req: HttpRequest, deps: Deps): Promise<Reply> {
  const state = req.query.get('state') ?? '';
  const pending = await pendingSignIn(req, deps, state);
  const orgId = pending.orgId;
  const sso = await readOrgSso(deps.db, orgId);
  if (!sso) throw new TroupeError('VALIDATION_FAILED', 'state: the org no longer signs in at this provider', { field: 'state' });
  const refuse = async (err: TroupeError, subject: string | null = null): Promise<never> => {
    await auditTrail(deps, orgId, 'auth.sso_failed', 'sso', subject, { issuer: sso.issuer, reason: err.message });
    throw err;
  };
  const providerError = req.query.get('error');
  if (providerError !== null) return refuse(new TroupeError('AUTH_INVALID', `the provider did not sign the person in: ${providerError.slice(0, 128)}`));
  const checks = JSON.parse(deps.secrets.open(pending.sealedChecks, checksSealContext(orgId))) as SignInChecks;
  const callbackUrl = new URL(pending.redirectUri);
  callbackUrl.search = req.query.toString();
  let claims: Readonly<Record<string, unknown>>;
  let profile: SsoProfile;
  try {
    claims = await redeemCode(await providerOf(deps, sso), callbackUrl, { state, checks });
    profile = profileOf(claims, sso);
  } catch (err) {
    if (err instanceof TroupeError && err.code !== 'UPSTREAM_FAILED') return refuse(err);
    throw err;
  }
  const groups = groupsOf(claims, sso.groupsClaim);
  const mapped = mappedRole(groups, sso.roleMap);
  const member = await signInSsoMember(deps.db, orgId, profile, (current, otherOwners) => roleAtSignIn({ mapped, defaultRole: sso.defaultRole, current, otherOwners }));
  if ('refused' in member) return refuse(new TroupeError('AUTH_FORBIDDEN', member.refused), member.user?.id ?? null);
  const { user, before, after } = member;
  const audit = { issuer: sso.issuer, groups: groups ?? null, source: 'sso' };
  if (before === undefined) await auditTrail(deps, orgId, 'member.provisioned', 'sso', user.id, { ...audit, role: after, userCreated: member.userCreated });
  else if (before !== after) {
    // Every node must stop acting on the role it memoised for this person.
    await announceRevocation(deps, [tags.member(orgId, user.id)]);
    await auditTrail(deps, orgId, 'member.role_changed', 'sso', user.id, { ...audit, from: before, to: after });
  }
  const token = await userToken(deps, user.id, orgId);
  await auditTrail(deps, orgId, 'auth.sso_login', `user:${user.id}`, user.id, { issuer: sso.issuer, role: after });
  const maxAge = Math.max(0, Math.floor((token.expiresAt - deps.clock.now()) / 1000));
  return {
    kind: 'text', contentType: 'text/html; charset=utf-8', body: signedInPage(pending.nextPath),
    headers: {
      refresh: `0; url=${pending.nextPath}`, 'set-cookie': sessionCookie(deps, token.token, maxAge), 'cache-control': 'no-store',
      'content-security-policy': "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      'referrer-policy': 'no-referrer',
    },
  };
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The answer a signed-in browser gets: a page that moves on to where the sign-in started at once (a `Refresh`, and the
 * same in the page for browsers that ignore the header), so the code and state in the address leave the history.
 * A page rather than a 303: every operation of the document answers a 2xx (the Redocly rules it is held to).
 */
function signedInPage(next: string): string {
  const to = escapeHtml(next);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=${to}"><title>Signed in to Troupe</title></head>`
    + `<body><p>Signed in. <a href="${to}">Continue to Troupe</a>.</p></body></html>`;
}

/**
 * A browser that the provider sent back is shown the sign-in page with the refusal's code rather than a JSON body;
 * any other client (an API test, a script) gets the `{error, code}` answer.
 */
async function callbackForBrowsers(req: HttpRequest, deps: Deps): Promise<Reply> {
  try {
    return await callback(req, deps);
  } catch (err) {
    if (!(err instanceof TroupeError) || !(req.headers.accept ?? '').includes('text/html')) throw err;
    return {
      kind: 'text', status: 303, contentType: 'text/plain; charset=utf-8', body: '',
      headers: { location: `/sign-in?ssoError=${encodeURIComponent(err.code)}`, 'cache-control': 'no-store' },
    };
  }
}

export function ssoSignInRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/auth/oidc/start', auth: 'none', tags: ['auth', 'sso'],
      summary: "Start signing in with an email: when its domain is verified by an org's single sign-on, the provider's authorization URL to send the browser to (and the troupe_oidc cookie binding the sign-in to this browser); otherwise sso: false and the password form applies. Limited per source address (429 with Retry-After)",
      bodySchema: ssoStartBody, responseSchema: ssoStartReply, handler: start,
    }),
    route({
      method: 'get', path: CALLBACK_PATH, auth: 'none', tags: ['auth', 'sso'],
      summary: 'Where the OpenID provider sends the browser back: the state must be unused, unexpired and this browser\'s; the ID token is verified (issuer, audience, nonce); the person is provisioned and given their role, and the troupe_session cookie is set (a page that moves on to the console at once). Refusals are 4xx, or a 303 to /sign-in?ssoError=CODE for a browser asking for HTML',
      querySchema: ssoCallbackQuery, responseContentType: 'text/html', responseSchema: { type: 'string' }, handler: callbackForBrowsers,
      errorResponses: { 303: { description: 'A refusal, to a browser asking for HTML: to /sign-in?ssoError=CODE', schema: { type: 'string' } } },
    }),
  ];
}
