import { createHash, timingSafeEqual } from 'node:crypto';
import { TroupeError } from '../ops/kernel/errors.js';
import type { Authenticator } from '../actors/services/identity/ports.js';
import type { Principal } from '../actors/services/identity/principal.js';
import type { AuthMode } from './types.js';

/** What the auth step needs from the composition root. `adminToken` is always filled there (generated if unset). */
export interface AuthDeps {
  readonly auth: Authenticator;
  readonly config: { readonly adminToken: string | undefined };
}

export interface PresentedCredentials {
  readonly authorization: string | undefined;
  readonly cookie: string | undefined;
}

const ADMIN: Principal = Object.freeze({ kind: 'admin' });

/**
 * Enforces a route's AuthMode and returns who is calling (undefined only for 'none').
 *
 * The platform admin token and org credentials never cross: admin routes refuse org credentials (403
 * AUTH_ADMIN_ONLY) and org routes refuse the admin token (403). Missing credentials are 401 AUTH_MISSING; a
 * credential the authenticator rejects is 401 AUTH_INVALID (it throws that itself). A route whose mode the caller
 * authenticates for but does not fit (an API key on a human-only route) is 403, per CONTRACT "Identity".
 */
export async function authenticate(mode: AuthMode, presented: PresentedCredentials, deps: AuthDeps): Promise<Principal | undefined> {
  if (mode === 'none') return undefined;

  const adminToken = deps.config.adminToken;
  if (typeof adminToken !== 'string' || adminToken.length === 0) {
    // The composition root always sets it; running without one would leave admin routes open or unusable.
    throw new Error('config.adminToken is not set; the composition root must provide it');
  }
  const isAdmin = bearerMatches(presented.authorization, adminToken);

  if (mode === 'admin') {
    if (isAdmin) return ADMIN;
    const principal = await deps.auth.resolve(presented);
    if (principal === undefined) throw new TroupeError('AUTH_MISSING');
    throw new TroupeError('AUTH_ADMIN_ONLY');
  }

  if (isAdmin) throw new TroupeError('AUTH_FORBIDDEN', 'the platform admin token is not an org credential');
  const principal = await deps.auth.resolve(presented);
  if (principal === undefined) throw new TroupeError('AUTH_MISSING');
  refuseUnlessFits(mode, principal);
  return principal;
}

/**
 * `authenticate`'s answer when it needs no await: a bearer credential the authenticator holds memoised (a worker's
 * token on its every heartbeat), for an org route it fits (a credential that does not fit is refused here as there).
 * `undefined` when it cannot tell synchronously (no credential, a cookie, the admin token, a first sight, an admin
 * or unauthenticated route): then call `authenticate`. Saves the two promises and awaits of the async path, each of
 * which also runs the trace's async hook.
 */
export function memoisedPrincipal(mode: AuthMode, presented: PresentedCredentials, deps: AuthDeps): Principal | undefined {
  const { authorization } = presented;
  if (mode === 'none' || mode === 'admin' || authorization === undefined || deps.auth.resolveMemoised === undefined) return undefined;
  const adminToken = deps.config.adminToken;
  // Unset, or presented here: `authenticate` throws what it throws for either.
  if (typeof adminToken !== 'string' || adminToken.length === 0 || bearerMatches(authorization, adminToken)) return undefined;
  const principal = deps.auth.resolveMemoised(authorization);
  if (principal !== undefined) refuseUnlessFits(mode, principal);
  return principal;
}

function refuseUnlessFits(mode: Exclude<AuthMode, 'none' | 'admin'>, principal: Principal): void {
  if (principal.kind === 'admin') throw new TroupeError('AUTH_FORBIDDEN', 'the platform admin token is not an org credential');
  switch (mode) {
    case 'human':
      if (principal.kind !== 'user') throw new TroupeError('AUTH_HUMAN_ONLY');
      return;
    case 'runtime':
      if (principal.kind !== 'runtime') throw new TroupeError('AUTH_FORBIDDEN', 'this operation takes a worker runtime token');
      return;
    case 'org':
      if (principal.kind === 'runtime') throw new TroupeError('AUTH_FORBIDDEN', 'a worker runtime token cannot call this operation');
      return;
    case 'any':
      return;
  }
}

/**
 * Constant-time check of `Authorization: Bearer <token>` against the admin token, matched case-insensitively (RFC
 * 7235). Every org request passes through here, so a presented token of another length is refused without hashing:
 * that reveals only the admin token's length. Tokens of the same length are compared as SHA-256 digests, in
 * constant time whatever their bytes.
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  if (authorization === undefined) return false;
  // The common header, `Bearer <token>` with nothing around it, presents exactly what follows the scheme: another
  // length is refused without running the expression over a token of hundreds of characters (every heartbeat's JWT).
  if (authorization.startsWith('Bearer ') && authorization.length - 7 !== token.length && isTokenChar(authorization.charCodeAt(7))
    && isTokenChar(authorization.charCodeAt(authorization.length - 1))) return false;
  const match = /^bearer[ ]+(\S+)\s*$/i.exec(authorization);
  if (match === null) return false;
  const presented = match[1]!;
  if (presented.length !== token.length) return false;
  return timingSafeEqual(createHash('sha256').update(presented).digest(), digestOf(token));
}

/** Certainly not whitespace as `\s` reads it; a doubtful character (say U+00A0 or above U+167F) says no, and the expression decides. */
function isTokenChar(code: number): boolean {
  return code > 0x20 && code !== 0x7f && code !== 0x85 && code !== 0xa0 && code < 0x1680;
}

/** The configured token's digest, computed once per token rather than on every request that is checked against it. */
let lastDigest: { readonly token: string; readonly digest: Buffer } | undefined;
function digestOf(token: string): Buffer {
  if (lastDigest?.token !== token) lastDigest = { token, digest: createHash('sha256').update(token).digest() };
  return lastDigest.digest;
}
