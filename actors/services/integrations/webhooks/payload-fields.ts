/**
 * Defensive reads of a provider's JSON: a signed body is trusted to come from the provider, not to have the shape
 * its documentation promises, so every field is checked before it reaches a plan, and bounded before it reaches a
 * row or a prompt.
 */
export const record = (v: unknown): Record<string, unknown> =>
  (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : {});

/** A non-blank string, cut to `max` characters. */
export const text = (v: unknown, max: number): string | undefined =>
  (typeof v === 'string' && v.trim() !== '' ? v.slice(0, max) : undefined);

export const positiveInteger = (v: unknown): number | undefined =>
  (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : undefined);

/** Only https links are copied into a session's activities, where people click them. */
export const httpsUrl = (v: unknown): string | undefined =>
  (typeof v === 'string' && v.length <= 1000 && /^https:\/\/[^\s\x00-\x1f\x7f]+$/.test(v) ? v : undefined);

/**
 * Agents push their work on `troupe/<sessionId>` or `troupe/<sessionId>/<anything>` (the public 16-hex id), so a
 * CI run or a deployment names its session through its branch, with nothing configured at the provider
 * (decision 0014).
 */
const SESSION_BRANCH = /^troupe\/([0-9a-f]{16})(?:\/.*)?$/;

export function sessionIdOfBranch(branch: unknown): string | undefined {
  const name = text(branch, 500);
  return name === undefined ? undefined : SESSION_BRANCH.exec(name)?.[1];
}
