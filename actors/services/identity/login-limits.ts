import type { RateLimits } from '../../../storage/rate-limits.js';

/**
 * Bounds online guessing (decision 0026). Failed logins are counted per (email, source address) and, more slowly,
 * per email from anywhere: one caller can no longer lock a user out by failing ten times a minute, because the
 * user's own address has its own count, while a guesser spread over many addresses still meets the email's ceiling.
 *
 * The ceiling refuses only sources with failures of their own (issue 30): ten addresses failing for a victim's email
 * must not lock the victim out of theirs for an hour. Past the ceiling a source with no recent failures may still
 * try, and a failure then bars that source for the rest of the hour, so a guesser past the ceiling needs a new
 * address for every guess. A success clears its source's count. The counts are checked before the password is.
 */
export function loginLimits(limits: RateLimits, email: string, source: string) {
  const { loginFailuresBySource: bySource, loginFailuresByEmail: byEmail, loginFailuresPastCeiling: pastCeiling } = limits;
  const sourceKey = `${email}|${source}`;
  let ceilingReached = false;
  return {
    async assertOpen() {
      await bySource.assertOpen(sourceKey);
      await pastCeiling.assertOpen(sourceKey);
      try {
        await byEmail.assertOpen(email);
      } catch (refusal) {
        if ((await bySource.used(sourceKey)) > 0) throw refusal;
        ceilingReached = true;
      }
    },
    async failed() {
      await Promise.all([bySource.note(sourceKey), byEmail.note(email), ...(ceilingReached ? [pastCeiling.note(sourceKey)] : [])]);
    },
    async succeeded() {
      await bySource.forget(sourceKey);
    },
  };
}
