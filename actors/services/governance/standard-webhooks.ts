import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks verification (https://www.standardwebhooks.com), as pure functions of the exact bytes received.
 * The signed content is `${webhook-id}.${webhook-timestamp}.${body}`, HMAC-SHA256 with the base64-decoded secret
 * (`whsec_` prefix optional); `webhook-signature` is a space-separated list of `<version>,<base64>`, of which any
 * `v1` entry may match. Every refusal is a `WebhookRefusal` with a reason code for logs and audit, never a detail
 * that helps a forger.
 */

/** Deliveries this far from our clock either way are refused (spec 8: five-minute replay window, inclusive). */
export const REPLAY_WINDOW_SECONDS = 5 * 60;
/** Bounds the work a hostile header can cause. */
const MAX_SIGNATURES = 32;
const MAX_HEADER_CHARS = 4096;
const SIGNATURE_BYTES = 32;

export type RefusalReason =
  | 'missing-headers' | 'malformed-id' | 'malformed-timestamp' | 'stale-timestamp' | 'malformed-signature'
  | 'no-matching-secret' | 'ambiguous-secret' | 'undecryptable-secret' | 'unrouted' | 'replayed' | 'oversize' | 'bad-utf8' | 'bad-json';

export class WebhookRefusal extends Error {
  constructor(readonly reason: RefusalReason) {
    super(`webhook refused: ${reason}`);
    this.name = 'WebhookRefusal';
  }
}

export interface SignedHeaders {
  readonly id: string;
  /** Seconds since the epoch, exactly as sent (it is part of the signed content). */
  readonly timestamp: string;
  /** Decoded `v1` signatures; entries of other versions are ignored, as the standard says. */
  readonly signatures: readonly Buffer[];
}

/** Parses the three headers; throws WebhookRefusal on anything missing or malformed. */
export function parseSignedHeaders(headers: Readonly<Record<string, string | undefined>>): SignedHeaders {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signature = headers['webhook-signature'];
  if (id === undefined || timestamp === undefined || signature === undefined) throw new WebhookRefusal('missing-headers');
  // The id goes into the signed content and the replay store: printable ASCII, bounded. The signed content stays
  // unambiguous even if the id holds a "." because the timestamp after it is digits only.
  if (id.length === 0 || id.length > 256 || !/^[\x21-\x7e]+$/.test(id)) throw new WebhookRefusal('malformed-id');
  if (!/^\d{1,12}$/.test(timestamp)) throw new WebhookRefusal('malformed-timestamp');
  if (signature.length > MAX_HEADER_CHARS) throw new WebhookRefusal('malformed-signature');
  const signatures: Buffer[] = [];
  for (const entry of signature.split(' ').slice(0, MAX_SIGNATURES)) {
    const comma = entry.indexOf(',');
    if (comma <= 0) continue;
    if (entry.slice(0, comma) !== 'v1') continue;
    const encoded = entry.slice(comma + 1);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) continue;
    const decoded = Buffer.from(encoded, 'base64');
    if (decoded.length === SIGNATURE_BYTES) signatures.push(decoded);
  }
  if (signatures.length === 0) throw new WebhookRefusal('malformed-signature');
  return { id, timestamp, signatures };
}

/** Throws unless the timestamp is within the replay window of `nowMs` (the boundary itself is accepted). */
export function assertFresh(timestamp: string, nowMs: number, windowSeconds = REPLAY_WINDOW_SECONDS): void {
  const sent = Number(timestamp);
  const now = Math.floor(nowMs / 1000);
  if (!Number.isSafeInteger(sent) || Math.abs(now - sent) > windowSeconds) throw new WebhookRefusal('stale-timestamp');
}

/** The key bytes of a `whsec_…` (or bare base64) secret; undefined when it is not base64 of at least 16 bytes. */
export function secretKey(secret: string): Buffer | undefined {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= 16 ? key : undefined;
}

/** The `v1,<base64>` signature of one delivery. */
export function sign(key: Buffer, id: string, timestamp: string, body: Buffer | string): string {
  return `v1,${digest(key, id, timestamp, body).toString('base64')}`;
}

/** True when any presented `v1` signature is this key's; every comparison is constant-time. */
export function signedBy(key: Buffer, headers: SignedHeaders, body: Buffer): boolean {
  const expected = digest(key, headers.id, headers.timestamp, body);
  let match = false;
  // No early exit: the time taken does not reveal which entry matched.
  for (const presented of headers.signatures) match = timingSafeEqual(presented, expected) || match;
  return match;
}

function digest(key: Buffer, id: string, timestamp: string, body: Buffer | string): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}
