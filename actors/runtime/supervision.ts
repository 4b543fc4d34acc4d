/**
 * What happens when an actor's handler throws (not when `decide` rejects: a rejection is a normal reply).
 * Policies are values so they can be table-tested; the runtime maps them onto nact's onCrash symbols.
 * - resume: keep the current state and mailbox (the failed message was answered with an error).
 * - stop: stop the actor; the next message rehydrates it from its last snapshot.
 * - restart: rehydrate from the last snapshot, at most `maxRestarts` times `withinMs`; beyond that, stop.
 */
export type SupervisionPolicy =
  | { readonly kind: 'resume' }
  | { readonly kind: 'stop' }
  | { readonly kind: 'restart'; readonly maxRestarts: number; readonly withinMs: number };

/** What the runtime does with a crashed actor; `system.ts` maps these onto nact's onCrash symbols. */
export type SupervisionDirective = 'resume' | 'stop' | 'restart';

/** The restarts an actor incarnation has gone through, oldest first (clock milliseconds). */
export interface CrashHistory {
  readonly restartsAt: readonly number[];
}

export const noCrashes: CrashHistory = { restartsAt: [] };

/**
 * A crash in a fresh actor most often means a bug that a restart would repeat, so the default gives it a few
 * tries in quick succession and then stops; the next message rehydrates from the last durable snapshot.
 */
export const defaultSupervision: SupervisionPolicy = { kind: 'restart', maxRestarts: 3, withinMs: 60_000 };

/**
 * Pure: given the crashes so far, the policy and the time, what to do now and the history to keep.
 * Restarts older than `withinMs` no longer count; the `maxRestarts + 1`-th crash inside the window stops the
 * actor. A malformed policy (negative or non-finite limits) stops rather than looping.
 */
export function decideSupervision(
  history: CrashHistory, policy: SupervisionPolicy, now: number,
): { directive: SupervisionDirective; history: CrashHistory } {
  switch (policy.kind) {
    case 'resume':
      return { directive: 'resume', history };
    case 'stop':
      return { directive: 'stop', history };
    case 'restart': {
      const { maxRestarts, withinMs } = policy;
      if (!Number.isFinite(maxRestarts) || maxRestarts < 0 || !Number.isFinite(withinMs) || withinMs < 0) {
        return { directive: 'stop', history };
      }
      const recent = history.restartsAt.filter((at) => at > now - withinMs && at <= now);
      if (recent.length >= maxRestarts) return { directive: 'stop', history: { restartsAt: recent } };
      return { directive: 'restart', history: { restartsAt: [...recent, now] } };
    }
  }
}
