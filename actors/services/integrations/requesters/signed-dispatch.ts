import { createHash, createPublicKey, verify as verifySignature, type KeyObject } from 'node:crypto';
import type { Deps } from '../../deps.js';
import { TroupeError } from '../../../../ops/kernel/errors.js';
import type { OrgPrincipal } from '../../identity/principal.js';
import { findRequester, type RequesterRecord } from '../../../../storage/integrations/requesters.js';

/**
 * Signed agent dispatch (spec 5.5; CONTRACT "Agent-dispatch signing headers"; decision 0014).
 *
 * A credential bound to a requester (an API key's or machine client's `requesterId`) whose registration holds an
 * Ed25519 public key must sign each dispatch: `X-Troupe-Request-Timestamp` (Unix seconds, digits),
 * `X-Troupe-Request-Nonce` (16–128 of `[A-Za-z0-9_-]`) and `X-Troupe-Request-Signature` (standard base64 of 64
 * bytes) over the canonical envelope — the JSON text of
 * `{"bodySha256","method","nonce","path","requesterId","timestamp"}` in that order, no whitespace. The requester id
 * and the body hash are in the signed bytes, so a signature made for another requester, org, path or body never
 * passes. Checks, in order: headers well-formed (401), timestamp within ±300 s inclusive of our clock (401),
 * signature (401), then the nonce is consumed in the cache (`SET NX`, 401 on replay). A cache outage skips only the
 * nonce check (best effort per spec), never the other two. A light registration without a key, an unbound key, a
 * user token or the session cookie need no headers; a strict registration without a key is misconfigured (403),
 * and so is a binding to a requester that does not exist in the credential's org.
 */
export const SIGNATURE_WINDOW_SECONDS = 300;
/** Nonces are remembered a little longer than any timestamp that could still be accepted with them. */
const NONCE_TTL_MS = (2 * SIGNATURE_WINDOW_SECONDS + 60) * 1000;

export const signingHeaders = {
  timestamp: 'x-troupe-request-timestamp',
  nonce: 'x-troupe-request-nonce',
  signature: 'x-troupe-request-signature',
} as const;

/** Ed25519 SubjectPublicKeyInfo DER header for a raw 32-byte key (RFC 8410). */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** The order L of the Ed25519 base point: a signature whose S is not below it is non-canonical (RFC 8032 §5.1.7). */
const ED25519_ORDER = 2n ** 252n + 27742317777372353535851937790883648493n;

/**
 * Strict standard base64 of exactly `bytes` bytes: the alphabet with `+/`, the padding the length implies, and the
 * unused low bits of the last character zero (so each byte string has exactly one accepted text).
 */
export function decodeStrictBase64(text: string, bytes: number): Buffer | undefined {
  const chars = Math.ceil(bytes / 3) * 4;
  const padding = (3 - (bytes % 3)) % 3;
  if (text.length !== chars) return undefined;
  if (!new RegExp(`^[A-Za-z0-9+/]{${chars - padding}}={${padding}}$`).test(text)) return undefined;
  const decoded = Buffer.from(text, 'base64');
  if (decoded.length !== bytes || decoded.toString('base64') !== text) return undefined;
  return decoded;
}

export function ed25519PublicKey(raw: Buffer): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

export interface EnvelopeFields {
  readonly bodySha256: string;
  readonly method: string;
  readonly nonce: string;
  readonly path: string;
  readonly requesterId: string;
  readonly timestamp: string;
}

/** The exact bytes a requester signs. Keys are written in sorted order by construction, values as JSON strings. */
export function canonicalEnvelope(f: EnvelopeFields): string {
  return JSON.stringify({
    bodySha256: f.bodySha256, method: f.method, nonce: f.nonce, path: f.path, requesterId: f.requesterId, timestamp: f.timestamp,
  });
}

export interface SignedRequest {
  readonly method: string;
  readonly path: string;
  readonly rawBody: Buffer;
  readonly headers: Readonly<Record<string, string | undefined>>;
}

const refuse = (reason: string): never => { throw new TroupeError('AUTH_INVALID', `request signature refused: ${reason}`); };

/**
 * Checks headers, window and signature for one requester's key; pure apart from the clock value passed in.
 * Returns the nonce, which the caller still has to consume.
 */
export function verifyDispatchSignature(publicKey: KeyObject, requesterId: string, req: SignedRequest, nowMs: number): { nonce: string } {
  const timestamp = req.headers[signingHeaders.timestamp];
  const nonce = req.headers[signingHeaders.nonce];
  const signatureText = req.headers[signingHeaders.signature];
  if (timestamp === undefined || nonce === undefined || signatureText === undefined) {
    throw new TroupeError('AUTH_MISSING', 'this credential must sign the request (X-Troupe-Request-Timestamp, -Nonce, -Signature)');
  }
  if (!/^\d{1,12}$/.test(timestamp)) refuse('malformed timestamp');
  if (!/^[A-Za-z0-9_-]{16,128}$/.test(nonce)) refuse('malformed nonce');
  const signature = decodeStrictBase64(signatureText, 64) ?? refuse('signature is not standard base64 of 64 bytes');
  const skew = Math.floor(nowMs / 1000) - Number(timestamp);
  if (Math.abs(skew) > SIGNATURE_WINDOW_SECONDS) refuse('timestamp outside the window');
  // Node's verifier is OpenSSL's, which checks S < L too; the explicit check keeps the rule visible and independent.
  if (littleEndian(signature.subarray(32)) >= ED25519_ORDER) refuse('non-canonical signature');
  const envelope = canonicalEnvelope({
    bodySha256: createHash('sha256').update(req.rawBody).digest('hex'),
    method: req.method.toUpperCase(), nonce, path: req.path, requesterId, timestamp,
  });
  if (!verifySignature(null, Buffer.from(envelope, 'utf8'), publicKey, signature)) refuse('signature does not verify');
  return { nonce };
}

function littleEndian(bytes: Buffer): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]!);
  return n;
}

type DispatchDeps = Pick<Deps, 'db' | 'cache' | 'clock' | 'log'>;

/** The requester a credential is bound to, if any (users and unbound keys have none). */
export function boundRequesterId(p: OrgPrincipal): string | undefined {
  return p.kind === 'apiKey' || p.kind === 'machine' ? p.requesterId : undefined;
}

/** A dispatch that passed spec 5.5: its requester, and the cache key of the nonce it consumed (if one was). */
export interface SignedDispatch {
  readonly requester: RequesterRecord;
  readonly nonceKey?: string;
}

/**
 * Refusals after which the dispatch certainly did not happen: nothing was sent to the session actor, or it could not
 * store anything. The client's retry of the same signed request must not be refused as a replay then (issue 20). An
 * answer that may hide a dispatch that happened (TRANSPORT_TIMEOUT, ACTOR_STOPPED) keeps the nonce: a retry needs a
 * fresh signature.
 */
const outageCodes: ReadonlySet<string> = new Set(['STORAGE_UNAVAILABLE', 'CACHE_UNAVAILABLE', 'TRANSPORT_UNAVAILABLE', 'OVERLOADED', 'SHUTTING_DOWN']);

/** Gives the nonce of a dispatch back when it was refused for an outage; keeps it for any other outcome. */
export async function releaseNonceAfter(deps: Pick<Deps, 'cache'>, signed: SignedDispatch | undefined, err: unknown): Promise<void> {
  if (signed?.nonceKey === undefined || !(err instanceof TroupeError) || !outageCodes.has(err.code)) return;
  await deps.cache.delete(signed.nonceKey);
}

/** Enforces spec 5.5 for one dispatch request; resolves when it may proceed. */
export async function assertSignedDispatch(deps: DispatchDeps, p: OrgPrincipal, req: SignedRequest): Promise<SignedDispatch | undefined> {
  const requesterId = boundRequesterId(p);
  if (requesterId === undefined) return undefined;
  const requester = await findRequester(deps.db, p.orgId, requesterId);
  if (!requester) throw new TroupeError('AUTH_FORBIDDEN', 'the credential is bound to a requester this org does not have');
  if (requester.publicKey === null) {
    if (requester.mode === 'strict') throw new TroupeError('AUTH_FORBIDDEN', 'a strict requester without a public key is misconfigured');
    return { requester };
  }
  const raw = decodeStrictBase64(requester.publicKey, 32);
  if (!raw) throw new TroupeError('AUTH_FORBIDDEN', 'the requester public key is unusable');
  const { nonce } = verifyDispatchSignature(ed25519PublicKey(raw), requester.id, req, deps.clock.now());
  const nonceKey = `dispatch-nonce:${requester.id}:${nonce}`;
  let fresh: boolean;
  try {
    fresh = await deps.cache.setIfAbsent(nonceKey, '1', NONCE_TTL_MS);
  } catch (err) {
    if (!(err instanceof TroupeError) || err.code !== 'CACHE_UNAVAILABLE') throw err;
    // Best effort by spec: without the cache a replay inside the window is not caught; signature and window still hold.
    deps.log.warn({ requesterId: requester.id }, 'nonce replay check skipped: cache unavailable');
    return { requester };
  }
  if (!fresh) refuse('nonce already used');
  return { requester, nonceKey };
}
