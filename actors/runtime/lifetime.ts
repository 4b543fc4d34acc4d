import { stop as stopNact } from 'nact';
import type { Entry, RuntimeState } from './entry.js';

/**
 * How long an actor stays in memory: an idle timer while it has nothing to do, passivation that waits for its
 * mailbox and its effects, and retirement, which lets the next message for its address start a fresh incarnation.
 */

export type RetireReason = 'idle' | 'passivated' | 'stale' | 'crashed';

/** Called whenever a message or an effect batch finishes: wakes whoever waits for quiet and re-arms the idle timer. */
export function settleIfIdle(rt: RuntimeState, entry: Entry): void {
  if (entry.queued > 0 || entry.effectsPending > 0) return;
  for (const wake of entry.idleWaiters.splice(0)) wake();
  if (!entry.retired && !entry.passivating && rt.closing === undefined) armIdleTimer(rt, entry);
}

function armIdleTimer(rt: RuntimeState, entry: Entry): void {
  disarmIdleTimer(entry);
  const idleMs = entry.behavior.passivateAfterMs ?? rt.passivateAfterMs;
  entry.idleTimer = setTimeout(() => {
    entry.idleTimer = undefined;
    if (entry.queued === 0 && entry.effectsPending === 0) retire(rt, entry, 'idle', true);
  }, idleMs);
  // An idle actor must not keep the process alive.
  entry.idleTimer.unref?.();
}

export function disarmIdleTimer(entry: Entry): void {
  if (entry.idleTimer !== undefined) clearTimeout(entry.idleTimer);
  entry.idleTimer = undefined;
}

/**
 * Takes the actor out of the address map at once, so the next message for its address spawns a fresh
 * incarnation that rehydrates; then stops it in nact (unless nact is already stopping it after a crash).
 */
export function retire(rt: RuntimeState, entry: Entry, reason: RetireReason, stopInNact: boolean): void {
  if (entry.retired) return;
  entry.retired = true;
  if (rt.entries.get(entry.address) === entry) rt.entries.delete(entry.address);
  disarmIdleTimer(entry);
  for (const wake of entry.idleWaiters.splice(0)) wake();
  if (stopInNact) stopNact(entry.ref);
  entry.log.debug({ reason }, 'actor stopped');
}

/** Lets the actor at `address` finish its mailbox and pending effects, then retires it. */
export async function passivate(rt: RuntimeState, address: string): Promise<void> {
  const entry = rt.entries.get(address);
  if (entry === undefined) return;
  entry.passivating = true;
  disarmIdleTimer(entry);
  while (!entry.retired && (entry.queued > 0 || entry.effectsPending > 0)) {
    await new Promise<void>((wake) => entry.idleWaiters.push(wake));
  }
  retire(rt, entry, 'passivated', true);
}
