import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Bearer secrets we mint (org API keys, daemon registration tokens): a fixed prefix naming the kind, then 40
 * base62 characters (≈238 bits). Only a SHA-256 of the whole secret is stored, with the first 8 characters after
 * the prefix kept in clear as a lookup key, so a leaked table lets nobody authenticate and a lookup is one index hit.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const SECRET_BODY_LENGTH = 40;
export const LOOKUP_PREFIX_LENGTH = 8;

export const apiKeyPrefix = 'trp_';
export const registrationTokenPrefix = 'trg_';

const bodyPattern = new RegExp(`^[0-9A-Za-z]{${SECRET_BODY_LENGTH}}$`);

/**
 * Uniform base62: bytes ≥ 248 (= 62 × 4) are discarded rather than reduced modulo 62, which would make the first
 * eight characters slightly more likely than the rest.
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length + 16)) {
      if (byte >= 248) continue;
      out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export interface MintedSecret {
  /** Shown to the caller once, never stored. */
  readonly full: string;
  readonly lookupPrefix: string;
  readonly hash: string;
}

export function mintSecret(kindPrefix: string): MintedSecret {
  const body = randomBase62(SECRET_BODY_LENGTH);
  const full = `${kindPrefix}${body}`;
  return { full, lookupPrefix: body.slice(0, LOOKUP_PREFIX_LENGTH), hash: sha256Hex(full) };
}

/** Splits a presented secret of the given kind; undefined when its shape is wrong (so it never reaches storage). */
export function parseSecret(kindPrefix: string, presented: string): { lookupPrefix: string; hash: string } | undefined {
  if (!presented.startsWith(kindPrefix)) return undefined;
  const body = presented.slice(kindPrefix.length);
  if (!bodyPattern.test(body)) return undefined;
  return { lookupPrefix: body.slice(0, LOOKUP_PREFIX_LENGTH), hash: sha256Hex(presented) };
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Compares two hex digests in time independent of where they differ; different lengths are simply unequal. */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  if (left.length !== right.length) return false;
  return timingSafeEqual(left, right);
}
