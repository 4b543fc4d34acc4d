import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The four webhook providers and their own signing schemes, as pure functions of the exact bytes received
 * (decision 0014). Each is checked against the provider's published description:
 * - GitHub (code host): `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`, delivery id in
 *   `X-GitHub-Delivery`, event in `X-GitHub-Event`.
 * - Linear (work tracker): `Linear-Signature: <hex HMAC-SHA256(secret, body)>`, delivery id in `Linear-Delivery`;
 *   the body's `webhookTimestamp` (ms) must be within a minute of our clock (Linear's own recommendation), because
 *   the signature covers no header timestamp.
 * - CircleCI (CI runner): `circleci-signature: v1=<hex HMAC-SHA256(secret, body)>` (a comma-separated list of
 *   versioned signatures; only `v1` exists), delivery id = the body's `id`, event in `circleci-event-type`.
 * - Vercel (hosting): `x-vercel-signature: <hex HMAC-SHA1(secret, body)>`, delivery id = the body's `id`.
 * Signatures are compared in constant time on decoded bytes; a malformed header is a refusal like a wrong one.
 */
export const webhookProviders = ['linear', 'github', 'circleci', 'vercel'] as const;
export type WebhookProvider = (typeof webhookProviders)[number];

export const isWebhookProvider = (name: string): name is WebhookProvider => (webhookProviders as readonly string[]).includes(name);

/** Linear: deliveries further than this from our clock are refused, either way. */
export const LINEAR_TIMESTAMP_TOLERANCE_MS = 60_000;
/** Bounds work a hostile header can cause (CircleCI's list form). */
const MAX_SIGNATURE_HEADER_CHARS = 2048;
const MAX_SIGNATURES = 8;

type Headers = Readonly<Record<string, string | undefined>>;

export type ProviderRefusalReason = 'missing-signature' | 'malformed-signature' | 'not-connected' | 'unknown-account' | 'no-matching-secret' | 'stale-timestamp';

export class ProviderWebhookRefusal extends Error {
  constructor(readonly reason: ProviderRefusalReason) {
    super(`webhook refused: ${reason}`);
    this.name = 'ProviderWebhookRefusal';
  }
}

interface Scheme {
  readonly algorithm: 'sha256' | 'sha1';
  /** The decoded signatures a delivery carries; throws ProviderWebhookRefusal when absent or malformed. */
  signatures(headers: Headers): Buffer[];
  /** The provider's own id of this delivery; undefined when the signed body or headers lack it. */
  deliveryId(headers: Headers, body: Record<string, unknown>): string | undefined;
  eventType(headers: Headers, body: Record<string, unknown>): string;
  /** Extra checks of the signed content (Linear's timestamp); throws ProviderWebhookRefusal. */
  assertFresh?(body: Record<string, unknown>, nowMs: number): void;
}

const hexDigest = (value: string | undefined, bytes: number, prefix = ''): Buffer => {
  if (value === undefined) throw new ProviderWebhookRefusal('missing-signature');
  if (value.length > MAX_SIGNATURE_HEADER_CHARS || !value.startsWith(prefix)) throw new ProviderWebhookRefusal('malformed-signature');
  const hex = value.slice(prefix.length).trim();
  if (!new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`).test(hex)) throw new ProviderWebhookRefusal('malformed-signature');
  return Buffer.from(hex, 'hex');
};

/** A delivery id goes into a unique key and logs: printable ASCII, bounded. */
const idFrom = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 && value.length <= 200 && /^[\x21-\x7e]+$/.test(value) ? value : undefined;

const label = (...parts: unknown[]): string =>
  parts.filter((p): p is string => typeof p === 'string' && p.length > 0).join('.').slice(0, 200) || 'unknown';

export const schemes: Record<WebhookProvider, Scheme> = {
  github: {
    algorithm: 'sha256',
    signatures: (h) => [hexDigest(h['x-hub-signature-256'], 32, 'sha256=')],
    deliveryId: (h) => idFrom(h['x-github-delivery']),
    eventType: (h, b) => label(h['x-github-event'], b.action),
  },
  linear: {
    algorithm: 'sha256',
    signatures: (h) => [hexDigest(h['linear-signature'], 32)],
    deliveryId: (h) => idFrom(h['linear-delivery']),
    eventType: (h, b) => label(typeof b.type === 'string' ? b.type : h['linear-event'], b.action),
    assertFresh(body, nowMs) {
      const ts = body.webhookTimestamp;
      if (typeof ts !== 'number' || !Number.isFinite(ts) || Math.abs(nowMs - ts) > LINEAR_TIMESTAMP_TOLERANCE_MS) {
        throw new ProviderWebhookRefusal('stale-timestamp');
      }
    },
  },
  circleci: {
    algorithm: 'sha256',
    signatures(h) {
      const header = h['circleci-signature'];
      if (header === undefined) throw new ProviderWebhookRefusal('missing-signature');
      if (header.length > MAX_SIGNATURE_HEADER_CHARS) throw new ProviderWebhookRefusal('malformed-signature');
      const found: Buffer[] = [];
      for (const entry of header.split(',').slice(0, MAX_SIGNATURES)) {
        const trimmed = entry.trim();
        // Versions other than v1 are skipped, so a future scheme added beside v1 does not break verification.
        if (!trimmed.startsWith('v1=')) continue;
        try { found.push(hexDigest(trimmed, 32, 'v1=')); } catch { /* a malformed entry among others is ignored */ }
      }
      if (found.length === 0) throw new ProviderWebhookRefusal('malformed-signature');
      return found;
    },
    deliveryId: (_h, b) => idFrom(b.id),
    eventType: (h, b) => label(typeof b.type === 'string' ? b.type : h['circleci-event-type']),
  },
  vercel: {
    algorithm: 'sha1',
    signatures: (h) => [hexDigest(h['x-vercel-signature'], 20)],
    deliveryId: (_h, b) => idFrom(b.id),
    eventType: (_h, b) => label(b.type),
  },
};

/** True when any of `signatures` is the provider's HMAC of `body` under `secret`; constant time per comparison. */
export function signedWith(provider: WebhookProvider, secret: string, signatures: readonly Buffer[], body: Buffer): boolean {
  const expected = createHmac(schemes[provider].algorithm, secret).update(body).digest();
  let matched = false;
  // Every candidate is compared (no early exit), so timing does not reveal which entry matched.
  for (const s of signatures) if (s.length === expected.length && timingSafeEqual(s, expected)) matched = true;
  return matched;
}

/** What a provider would send: used by tests and by operators checking a secret by hand. */
export function signatureHeaderFor(provider: WebhookProvider, secret: string, body: Buffer | string): Record<string, string> {
  const hex = createHmac(schemes[provider].algorithm, secret).update(body).digest('hex');
  switch (provider) {
    case 'github': return { 'x-hub-signature-256': `sha256=${hex}` };
    case 'linear': return { 'linear-signature': hex };
    case 'circleci': return { 'circleci-signature': `v1=${hex}` };
    case 'vercel': return { 'x-vercel-signature': hex };
  }
}
