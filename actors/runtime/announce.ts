import type { ActorBehavior, EffectContext } from './machine.js';

/**
 * Adds an announcement to a behaviour without touching its table: its machine's `decide` is wrapped to append an
 * effect carrying what `announce` derives from the change, so the runtime delivers it only after the snapshot
 * commits (never for a turn that changed nothing or failed to persist). The wrapped behaviour never sees the added
 * effect, and its own `project` and `afterPersist` still run for every change. Wrappers compose: each strips only
 * its own effect type.
 */
export interface Announcement<S, T> {
  /** A type no machine uses for its own effects, e.g. `sessionEvents.announce`. */
  readonly effectType: string;
  /**
   * What to announce for a change from `previous` to `next`, or undefined for nothing. `message` is what made the
   * change, for announcements that depend on why it happened (a stop, a queued prompt), not only on what changed.
   */
  announce(previous: S, next: S, id: string, message: { type: string }): T | undefined;
  /** Runs after the change is durable; best effort, its failure never fails the turn. */
  deliver(event: T, ctx: EffectContext<{ type: string }>): Promise<void>;
}

interface AnnouncedEffect<T> { readonly type: string; readonly event: T }

export function withAnnouncement<S, M extends { type: string }, R, E extends { type: string }, T>(
  behavior: ActorBehavior<S, M, R, E>, announcement: Announcement<S, T>,
): ActorBehavior<S, M, R, E> {
  // The effect type is the announcement's alone (see `effectType`), so the tag proves the shape.
  const ours = <X extends { type: string }>(e: X): e is X & AnnouncedEffect<T> => e.type === announcement.effectType;
  const theirs = (effects: readonly E[]): E[] => effects.filter((e) => !ours(e));
  return {
    ...behavior,
    machine: {
      ...behavior.machine,
      decide(state, message, ctx) {
        const decision = behavior.machine.decide(state, message, ctx);
        if (!decision.ok || decision.next === state) return decision;
        const event = announcement.announce(state, decision.next, ctx.id, message);
        if (event === undefined) return decision;
        const added: AnnouncedEffect<T> = { type: announcement.effectType, event };
        // Outside E on purpose: it rides in the wrapped behaviour's list under a type only this wrapper reads and strips.
        return { ...decision, effects: [...decision.effects, added as unknown as E] };
      },
    },
    // The wrapped behaviour's projection, whichever form it has, without the added effect.
    project: behavior.project === undefined
      ? undefined
      : (trx, id, next, previous, effects) => behavior.project!(trx, id, next, previous, theirs(effects)),
    projectStatement: behavior.projectStatement === undefined
      ? undefined
      : (statement, id, next, previous, effects) => behavior.projectStatement!(statement, id, next, previous, theirs(effects)),
    async afterPersist(effects, ctx) {
      for (const effect of effects) {
        if (!ours(effect)) continue;
        await announcement.deliver(effect.event, ctx as EffectContext<{ type: string }>)
          .catch((err: unknown) => ctx.log.warn({ err, effectType: announcement.effectType }, 'announcement not delivered'));
      }
      await behavior.afterPersist?.(theirs(effects), ctx);
    },
  };
}
