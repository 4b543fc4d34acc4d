import { TroupeError } from '../ops/kernel/errors.js';
import type { Envelope } from './envelope.js';

/**
 * A told message has no waiting caller, but it still carries a deadline so a message stuck behind an outage for
 * a day is dropped rather than acted on out of all context. Actors that need longer delays use their own timers.
 */
export const DEFAULT_TELL_TTL_MS = 24 * 60 * 60 * 1000;

/** Node's timers overflow above 2^31-1 ms (they then fire at once); a deadline must be a positive finite wait. */
export const MAX_ASK_TIMEOUT_MS = 2_147_483_647;

export function assertTimeout(timeoutMs: number): void {
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_ASK_TIMEOUT_MS) {
    throw new TroupeError('INTERNAL', 'ask timeout must be a positive integer number of milliseconds', { timeoutMs });
  }
}

/** Events feed live views (SSE); one that waited a minute behind a backlog describes a moment nobody is watching. */
export const EVENT_TTL_MS = 60_000;

/**
 * The deadline a delivery handler gets: the asker's, so the owner works on an ask exactly as long as someone waits
 * for its answer (not a default of its own). A tell's deadline is only its time to live, so none is passed on.
 */
export function askDeadline(envelope: Envelope): number | undefined {
  return envelope.type === 'ask' ? envelope.deadline : undefined;
}
