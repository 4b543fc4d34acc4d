/**
 * How the outboxes that call a provider on a session's behalf (tracker comments, pull requests) retry: a failure the
 * provider may recover from is tried again after a doubling delay from `TROUPE_TRACKER_RETRY_BASE_MS`, at most ten
 * minutes, and given up with its reason after the eighth attempt.
 */
export const MAX_ATTEMPTS = 8;
const MAX_BACKOFF_MS = 10 * 60_000;

/** When the attempt after `attempts` failed ones is due, or undefined when the owed call is given up. */
export function nextAttemptAt(attempts: number, retryBaseMs: number, now: number): number | undefined {
  if (attempts >= MAX_ATTEMPTS) return undefined;
  return now + Math.min(retryBaseMs * 2 ** (attempts - 1), MAX_BACKOFF_MS);
}
