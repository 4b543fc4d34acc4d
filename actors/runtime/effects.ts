import type { Logger } from '../../ops/kernel/logger.js';
import type { EffectContext } from './machine.js';
import type { Entry, RuntimeState } from './entry.js';
import { disarmIdleTimer, settleIfIdle } from './lifetime.js';
import { isOwnWrite, type LoadedCell } from './persistence.js';

/**
 * Effects run after the reply, one batch after another per actor (so they keep the order of the state changes
 * that produced them), but outside the mailbox: an effect that asks another actor which asks back cannot
 * deadlock this one. Passivation waits for them.
 */
export function scheduleEffects(rt: RuntimeState, entry: Entry, effects: readonly unknown[]): void {
  const run = entry.behavior.afterPersist;
  if (run === undefined || effects.length === 0) return;
  entry.effectsPending += 1;
  disarmIdleTimer(entry);
  const ctx: EffectContext<{ type: string }> = {
    id: entry.id, address: entry.address, log: entry.log,
    tellSelf: (message) => {
      try {
        rt.tell(entry.address, message);
      } catch (err) {
        entry.log.warn({ err, msgType: message.type }, 'tellSelf refused');
      }
    },
  };
  entry.effectChain = entry.effectChain
    // A macrotask hop, so an in-process asker's continuation sees the reply before any effect starts.
    .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
    .then(() => run.call(entry.behavior, effects, ctx))
    .catch((err: unknown) => { entry.log.error({ err }, 'afterPersist failed'); })
    .finally(() => {
      entry.effectsPending -= 1;
      settleIfIdle(rt, entry);
    });
}

/**
 * The stored snapshot is this node's own uncertain write when it has that write's version and its state (compared
 * as values: Postgres' jsonb keeps no key order): the write committed, so its effects (announcements to live streams
 * among them) are owed and run now, once. Effects carry their own keys (DESIGN rule 6), so one that had run before the
 * failure does nothing twice.
 */
export function settleUncertainWrite(rt: RuntimeState, entry: Entry, loaded: LoadedCell<unknown>, turnLog: Logger): void {
  const uncertain = entry.uncertainWrite;
  if (uncertain === undefined) return;
  entry.uncertainWrite = undefined;
  if (!isOwnWrite(uncertain, loaded)) return;
  turnLog.info({ version: loaded.version }, 'a write whose outcome was unknown had committed; its effects run now');
  scheduleEffects(rt, entry, uncertain.effects);
}
