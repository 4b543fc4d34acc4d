import { loginLimits } from '../../actors/services/identity/login-limits.js';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route, HttpRequest, Reply } from '../types.js';
import { route, type BodyOf } from '../route.js';
import { verifyPassword, decoyPasswordHash } from '../../actors/services/identity/passwords.js';
import { looksLikeJwt, signToken, userTokenId, verifyTokenSync } from '../../actors/services/identity/tokens.js';
import { readCookie, SESSION_COOKIE } from '../../actors/services/identity/authenticator.js';
import { tags } from '../../actors/services/identity/revocation.js';
import { announceRevocation } from './announce-revocation.js';
import { listMemberships } from '../../storage/identity/orgs.js';
import { findLoginByEmail } from '../../storage/identity/users.js';
import { ssoForDomain } from '../../storage/identity/sso.js';
import { revokeUserToken } from '../../storage/identity/revoked-user-tokens.js';
import * as schemas from '../../schemas/identity/http.js';
import { auditTrail } from './audit-trail.js';
import { requesterOf } from '../principal.js';

/**
 * Sign-in and sign-out: a user token and the troupe_session cookie for email and password (behind the login
 * limits, with one password check whether or not the email is known), and logout, which revokes the presented
 * user tokens on every node.
 */

/** The token a user acts with in `orgId`: handed out by login and to a newly provisioned user. */
export const userToken = (deps: Deps, userId: string, orgId: string) => signToken(deps.services.keys, deps.clock, 'user', { sub: userId, org: orgId });

/** The troupe_session cookie, as password sign-in and single sign-on (sso-sign-in.ts) set it. */
export function sessionCookie(deps: Deps, value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Lax; Path=/; Max-Age=${maxAgeSeconds}${deps.config.behindTls ? '; Secure' : ''}`;
}

export async function login(req: HttpRequest<BodyOf<typeof schemas.loginBody>>, deps: Deps): Promise<Reply> {
  const email = req.body.email.trim().toLowerCase();
  const limits = loginLimits(deps.services.rateLimits, email, req.clientAddress());
  await limits.assertOpen();
  const found = await findLoginByEmail(deps.db, email);
  // Unknown email, no password set, and wrong password all run one scrypt verification and end in the same 401.
  const stored = found?.passwordHash ?? (await decoyPasswordHash());
  const passwordOk = await verifyPassword(req.body.password, stored);
  if (!found) {
    await limits.failed();
    throw new TroupeError('AUTH_INVALID', 'email or password is wrong');
  }
  const memberships = await listMemberships(deps.db, found.user.id);
  const chosen = req.body.orgId === undefined ? memberships[0] : memberships.find((m) => m.org.id === req.body.orgId);
  if (found.passwordHash === null || !passwordOk || !chosen) {
    await limits.failed();
    // A failed sign-in to a known user is on the record of the org it named (or each of the user's orgs).
    const orgs = chosen ? [chosen.org.id] : memberships.map((m) => m.org.id);
    const reason = found.passwordHash === null ? 'no password set' : !passwordOk ? 'wrong password' : 'not a member of the org named';
    for (const orgId of orgs) await auditTrail(deps, orgId, 'auth.login_failed', `user:${found.user.id}`, found.user.id, { reason });
    throw new TroupeError('AUTH_INVALID', 'email or password is wrong');
  }
  // An org that enforces single sign-on takes no password for itself, for the domains it verified (decisions 0083,
  // 0091). Asked only once the password is right and only of the org being signed into: one org's domain can neither
  // lock another org's people out nor tell anyone whether an email has an account.
  const sso = await ssoForDomain(deps.db, email.slice(email.lastIndexOf('@') + 1));
  if (sso?.enforce && sso.orgId === chosen.org.id) {
    throw new TroupeError('SSO_REQUIRED', 'this org signs in with single sign-on only; continue with single sign-on');
  }
  await limits.succeeded();
  const token = await userToken(deps, found.user.id, chosen.org.id);
  await auditTrail(deps, chosen.org.id, 'auth.login', `user:${found.user.id}`, found.user.id);
  const maxAge = Math.max(0, Math.floor((token.expiresAt - deps.clock.now()) / 1000));
  return {
    body: { userToken: token.token, orgId: chosen.org.id, expiresAt: new Date(token.expiresAt).toISOString() },
    headers: { 'set-cookie': sessionCookie(deps, token.token, maxAge), 'cache-control': 'no-store' },
  };
}

/**
 * Ends the session of each user token the request presents (bearer and cookie), on every node, and clears the
 * cookie. Nothing presented, or nothing the authenticator accepts, ends nothing and still answers 200: logout
 * cannot fail a browser that is already logged out, and it can only end a token its caller holds.
 */
export async function logout(req: HttpRequest, deps: Deps): Promise<Reply> {
  for (const token of presentedUserTokens(req)) await endUserSession(deps, token);
  return { body: { ok: true }, headers: { 'set-cookie': sessionCookie(deps, '', 0), 'cache-control': 'no-store' } };
}

function presentedUserTokens(req: HttpRequest): string[] {
  const bearer = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '')?.[1];
  const cookie = req.headers.cookie === undefined ? undefined : readCookie(req.headers.cookie, SESSION_COOKIE);
  const tokens = [bearer, cookie].filter((t): t is string => t !== undefined && looksLikeJwt(t));
  return [...new Set(tokens)];
}

async function endUserSession(deps: Deps, token: string): Promise<void> {
  // Checked as the authenticator checks any route, so an expired, forged, already ended or non-user token (or one of
  // a user no longer in the org) is left alone; a storage outage is not swallowed (the session would live on).
  const accepted = await acceptedUserToken(deps, token);
  if (accepted === undefined) return;
  const { principal, verified } = accepted;
  const id = userTokenId(token, verified);
  await revokeUserToken(deps.db, { id, orgId: principal.orgId, userId: principal.userId, expiresAt: verified.expiresAt }, deps.clock.now());
  // Before answering, as for API keys: the caller's next request to this node is already refused.
  await announceRevocation(deps, [tags.userToken(id)]);
  await auditTrail(deps, principal.orgId, 'auth.logout', requesterOf(principal), principal.userId, { tokenId: id });
}

async function acceptedUserToken(deps: Deps, token: string) {
  try {
    const verified = verifyTokenSync(deps.services.keys, deps.clock, token, ['user']);
    const principal = await deps.auth.resolve({ authorization: `Bearer ${token}` });
    return principal?.kind === 'user' ? { principal, verified } : undefined;
  } catch (err) {
    if (err instanceof TroupeError && err.code === 'AUTH_INVALID') return undefined;
    throw err;
  }
}

export function loginRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/auth/login', auth: 'none', tags: ['auth'],
      summary: 'Exchange email and password for a user token and the troupe_session cookie; wrong password and unknown email are the same 401',
      bodySchema: schemas.loginBody, responseSchema: schemas.loginReply, handler: login,
    }),
    route({
      method: 'post', path: '/api/auth/logout', auth: 'none', tags: ['auth'], bodyKind: 'none',
      summary: 'End the presented user session (bearer user token and/or troupe_session cookie) on every node and clear the cookie; always 200, ending nothing when no valid user token is presented',
      responseSchema: schemas.okReply, handler: logout,
    }),
  ];
}
