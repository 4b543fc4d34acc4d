import { createHash, createPrivateKey, createPublicKey, randomBytes, verify as verifySignature, type KeyObject } from 'node:crypto';
import { SignJWT, type JWTPayload } from 'jose';
import type { Clock } from '../../../ops/kernel/clock.js';
import type { Secrets } from '../../../ops/kernel/secrets.js';
import { TroupeError } from '../../../ops/kernel/errors.js';

/**
 * Every JWT Troupe issues is EdDSA (Ed25519) with one key pair derived from the master key, so every node of a
 * cluster signs and verifies without sharing anything but TROUPE_MASTER_KEY, and rotating the master key
 * invalidates every token at once. The `typ` claim says which kind of principal a token stands for; a verifier
 * always names the `typ` it accepts, so a runtime token never passes as a user token or the reverse.
 */
export const ISSUER = 'troupe';
export const USER_TOKEN_TTL_SECONDS = 12 * 60 * 60;
export const RUNTIME_TOKEN_TTL_SECONDS = 15 * 60;
export const MACHINE_TOKEN_TTL_SECONDS = 60 * 60;
/**
 * A session token (decision 0088) lives at most this long, and in practice ends with its session's run: every use
 * checks the run is still live and the same one, so the time limit only bounds a token whose node lost track of it.
 */
export const SESSION_TOKEN_TTL_SECONDS = 7 * 24 * 60 * 60;

export type TokenType = 'user' | 'runtime' | 'machine' | 'session';

/** Ed25519 PKCS#8 DER header for a raw 32-byte seed (RFC 8410): node builds the key from it without any JWK step. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface SigningKeys {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

export function deriveSigningKeys(secrets: Secrets): SigningKeys {
  const seed = secrets.derive('jwt-ed25519-seed');
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: createPublicKey(privateKey) };
}

export interface UserClaims { readonly sub: string; readonly org: string }
export interface RuntimeClaims {
  /** Worker id. */
  readonly wid: string;
  readonly org: string;
  /** Projects the worker may serve. */
  readonly prj: readonly string[];
  /** Registration (token) id the worker registered with; revoking it ends the worker's access. */
  readonly reg: string;
  readonly scope: readonly string[];
}
export interface MachineClaims {
  /** OAuth client id. */
  readonly cid: string;
  readonly org: string;
  readonly scope: readonly string[];
  readonly rqid?: string;
}

/** Acts for one run of one session only: the agent's line to the team (`troupe mcp`, decision 0088). */
export interface SessionClaims {
  /** The session's key (its actor address and rows). */
  readonly sid: string;
  readonly org: string;
  readonly prj: string;
  /** The run (epoch) the token was given for; a later run of the same session needs its own. */
  readonly ep: number;
  /** The worker that held the run when the token was given. */
  readonly wid: string;
}

export type ClaimsOf<T extends TokenType> = T extends 'user' ? UserClaims : T extends 'runtime' ? RuntimeClaims
  : T extends 'session' ? SessionClaims : MachineClaims;

export interface IssuedToken { readonly token: string; readonly expiresAt: number }

const defaultTtl: Record<TokenType, number> = {
  user: USER_TOKEN_TTL_SECONDS,
  runtime: RUNTIME_TOKEN_TTL_SECONDS,
  machine: MACHINE_TOKEN_TTL_SECONDS,
  session: SESSION_TOKEN_TTL_SECONDS,
};

/** Signs a token of the given type; `expiresAt` (ms) lets callers decide when to refresh. */
export async function signToken<T extends TokenType>(
  keys: SigningKeys, clock: Clock, typ: T, claims: ClaimsOf<T>, ttlSeconds: number = defaultTtl[typ],
): Promise<IssuedToken> {
  const issuedAt = Math.floor(clock.now() / 1000);
  const expiresAtSeconds = issuedAt + ttlSeconds;
  const jwt = new SignJWT({ ...claims, typ })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAtSeconds);
  // A user token is a login session, which logout ends by this id; runtime and machine tokens end with their
  // registration or client instead, so they carry none.
  if (typ === 'user') jwt.setJti(randomBytes(16).toString('base64url'));
  const token = await jwt.sign(keys.privateKey);
  return { token, expiresAt: expiresAtSeconds * 1000 };
}

export interface VerifiedToken<T extends TokenType> {
  readonly typ: T;
  readonly claims: ClaimsOf<T>;
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
  /** The `jti` claim, present only when the token has one. */
  readonly jti?: string;
}

/**
 * The id under which a user token is revoked: its `jti`, or for a token signed before user tokens carried one, a
 * digest of the token itself (those still verify until they expire, and logout must end them too).
 */
export function userTokenId(token: string, verified: VerifiedToken<'user'>): string {
  return verified.jti ?? `sha256:${createHash('sha256').update(token).digest('base64url')}`;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/**
 * Verifies signature, algorithm (EdDSA only: `none` and HMAC are refused however the header is dressed up),
 * issuer, expiry against the injected clock, and that the claims of `typ` are present and well typed.
 * Throws AUTH_INVALID for anything else; never says which check failed to the caller.
 */
export async function verifyToken<T extends TokenType>(
  keys: SigningKeys, clock: Clock, token: string, accept: readonly T[],
): Promise<VerifiedToken<T>> {
  return verifyTokenSync(keys, clock, token, accept);
}

/** An Ed25519 signature is 64 bytes: 86 base64url characters, unpadded. */
const ED25519_SIGNATURE_CHARS = 86;
const base64urlPattern = /^[A-Za-z0-9_-]+$/;
/** Header parameters we understand; anything else (`crit`, `b64`, `jku`, `jwk`, `kid`, `x5u`, …) is refused. */
const allowedHeaderKeys = new Set(['alg', 'typ']);
/** What `signToken` writes (22 characters); bounded so a revocation row and tag stay small. */
const jtiPattern = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `verifyToken` without the promise: the signature is checked by node:crypto's one-shot Ed25519 verify (no key
 * import, no async hop), which is what keeps a first-seen runtime JWT cheap on the heartbeat path (PERFORMANCE.md
 * G8). The header is checked strictly before any signature work: exactly `{alg: "EdDSA"}` plus an optional
 * `typ: "JWT"`, so `none`, HS256 (the public key used as an HMAC secret) and every other algorithm are refused.
 */
export function verifyTokenSync<T extends TokenType>(
  keys: SigningKeys, clock: Clock, token: string, accept: readonly T[],
): VerifiedToken<T> {
  const payload = verifiedPayload(keys, token);
  if (payload === undefined) throw new TroupeError('AUTH_INVALID');
  if (payload.iss !== ISSUER) throw new TroupeError('AUTH_INVALID');
  const nowSeconds = Math.floor(clock.now() / 1000);
  if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp) || payload.exp <= nowSeconds) throw new TroupeError('AUTH_INVALID');
  if (typeof payload.iat !== 'number' || !Number.isFinite(payload.iat)) throw new TroupeError('AUTH_INVALID');
  if (payload.nbf !== undefined && (typeof payload.nbf !== 'number' || payload.nbf > nowSeconds)) throw new TroupeError('AUTH_INVALID');
  const typ = payload.typ;
  if (typeof typ !== 'string' || !(accept as readonly string[]).includes(typ)) throw new TroupeError('AUTH_INVALID');
  const claims = claimsOf(typ as TokenType, payload);
  if (!claims) throw new TroupeError('AUTH_INVALID');
  const verified = { typ: typ as T, claims: claims as ClaimsOf<T>, expiresAt: payload.exp * 1000 };
  if (payload.jti === undefined) return verified;
  if (typeof payload.jti !== 'string' || !jtiPattern.test(payload.jti)) throw new TroupeError('AUTH_INVALID');
  return { ...verified, jti: payload.jti };
}

/** The payload of a compact JWS whose header is strictly ours and whose Ed25519 signature verifies; else undefined. */
function verifiedPayload(keys: SigningKeys, token: string): JWTPayload | undefined {
  const firstDot = token.indexOf('.');
  const secondDot = token.indexOf('.', firstDot + 1);
  if (firstDot <= 0 || secondDot <= firstDot + 1 || token.indexOf('.', secondDot + 1) !== -1) return undefined;
  const encodedHeader = token.slice(0, firstDot);
  const encodedPayload = token.slice(firstDot + 1, secondDot);
  const encodedSignature = token.slice(secondDot + 1);
  if (encodedSignature.length !== ED25519_SIGNATURE_CHARS || !base64urlPattern.test(encodedSignature)) return undefined;
  if (!base64urlPattern.test(encodedHeader) || !base64urlPattern.test(encodedPayload)) return undefined;
  const header = decodeJsonObject(encodedHeader);
  if (header === undefined || header.alg !== 'EdDSA' || (header.typ !== undefined && header.typ !== 'JWT')) return undefined;
  for (const key of Object.keys(header)) if (!allowedHeaderKeys.has(key)) return undefined;
  const signature = Buffer.from(encodedSignature, 'base64url');
  // Non-canonical base64url (stray bits in the last character) would let one signature have several spellings.
  if (signature.length !== 64 || signature.toString('base64url') !== encodedSignature) return undefined;
  const signingInput = Buffer.from(token.slice(0, secondDot), 'ascii');
  if (!verifySignature(null, signingInput, keys.publicKey, signature)) return undefined;
  return decodeJsonObject(encodedPayload) as JWTPayload | undefined;
}

function decodeJsonObject(encoded: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function claimsOf(typ: TokenType, p: JWTPayload): UserClaims | RuntimeClaims | MachineClaims | SessionClaims | undefined {
  const c = p as Record<string, unknown>;
  if (typeof c.org !== 'string' || !uuidPattern.test(c.org)) return undefined;
  switch (typ) {
    case 'user':
      return typeof c.sub === 'string' && uuidPattern.test(c.sub) ? { sub: c.sub, org: c.org } : undefined;
    case 'runtime':
      return typeof c.wid === 'string' && typeof c.reg === 'string' && isStringArray(c.prj) && isStringArray(c.scope)
        ? { wid: c.wid, org: c.org, prj: c.prj, reg: c.reg, scope: c.scope }
        : undefined;
    case 'machine':
      if (typeof c.cid !== 'string' || !isStringArray(c.scope)) return undefined;
      if (c.rqid !== undefined && typeof c.rqid !== 'string') return undefined;
      return c.rqid === undefined ? { cid: c.cid, org: c.org, scope: c.scope } : { cid: c.cid, org: c.org, scope: c.scope, rqid: c.rqid };
    case 'session':
      return typeof c.sid === 'string' && typeof c.prj === 'string' && uuidPattern.test(c.prj) && typeof c.wid === 'string'
        && typeof c.ep === 'number' && Number.isInteger(c.ep) && c.ep > 0
        ? { sid: c.sid, org: c.org, prj: c.prj, ep: c.ep, wid: c.wid }
        : undefined;
  }
}

/** Cheap shape test so the authenticator only spends a signature check on something that looks like a JWS. */
export const looksLikeJwt = (value: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(value);
