import type { OfferedSession } from './api.js';
import type { WorkerLog } from './log.js';
import { isSessionId } from './server-ids.js';

/**
 * What the worker checks in what a server sends before acting on it (issue 30): a broken or hostile server's data is
 * refused, logged once, and never used as a path, a number to spin on or a log line of its own.
 */

/** An interval the server set, in whole seconds between 1 and an hour: a hostile 0 must not make the worker spin. */
export const intervalSeconds = (value: unknown, otherwise: number): number =>
  typeof value === 'number' && Number.isFinite(value) ? Math.min(3600, Math.max(1, Math.floor(value))) : otherwise;

/** Why an offer is refused before anything is made for it, or undefined when it is well-formed. */
export function offerProblem(offer: OfferedSession): string | undefined {
  if (!isSessionId(offer.id)) return 'its session id is not a session id';
  if (typeof offer.projectId !== 'string') return 'its project id is not a string';
  if (typeof offer.prompt !== 'string') return 'its prompt is not a string';
  return undefined;
}

/** At most this many refused ids are remembered so that each is logged once, not at every poll. */
const REFUSED_REMEMBERED = 1000;

/** Warnings about malformed ids the server sent, once per id (a hostile server repeats it at every poll). */
export class RefusalLog {
  private readonly seen = new Set<string>();

  constructor(private readonly log: WorkerLog) {}

  note(event: string, msg: string, id: unknown): void {
    const shown = typeof id === 'string' ? id : JSON.stringify(id) ?? String(id);
    const key = `${event} ${shown.slice(0, 200)}`;
    if (this.seen.has(key)) return;
    if (this.seen.size >= REFUSED_REMEMBERED) this.seen.clear();
    this.seen.add(key);
    this.log('warn', event, msg, { offeredId: shown });
  }
}
