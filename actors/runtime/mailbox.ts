import { dispatch } from 'nact';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Clock } from '../../ops/kernel/clock.js';
import type { Entry, Envelope, Outcome } from './entry.js';
import { disarmIdleTimer } from './lifetime.js';

/** Putting a checked message into an actor's mailbox: a tell as it is, an ask with the deadline its asker waits for. */

export function enqueue(entry: Entry, envelope: Envelope): void {
  entry.queued += 1;
  disarmIdleTimer(entry);
  dispatch(entry.ref, envelope);
}

export function enqueueTell(entry: Entry, message: { type: string }): void {
  enqueue(entry, { message, reply: undefined, deadline: undefined });
}

/**
 * Resolves with the reply, or rejects with TRANSPORT_TIMEOUT once `timeoutMs` has passed. The envelope carries the
 * same deadline, so an actor that reaches the message only after it skips the work.
 */
export function enqueueAsk(clock: Clock, entry: Entry, message: { type: string }, timeoutMs: number): Promise<unknown> {
  const waitMs = Math.max(1, Math.floor(timeoutMs));
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (outcome.ok) resolve(outcome.value);
      else reject(outcome.error);
    };
    const timer = setTimeout(() => settle({
      ok: false, error: new TroupeError('TRANSPORT_TIMEOUT', undefined, { address: entry.address, timeoutMs: waitMs }),
    }), waitMs);
    enqueue(entry, { message, reply: settle, deadline: clock.now() + waitMs });
  });
}

/** The time an asker on another node has left, from the absolute deadline its envelope carries (wall clock). */
export const timeLeftUntil = (deadline: number | undefined): number | undefined =>
  deadline === undefined ? undefined : Math.max(1, deadline - Date.now());
