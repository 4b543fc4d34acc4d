import type { Ref } from 'nact';
import type { TroupeError } from '../../ops/kernel/errors.js';
import type { Clock } from '../../ops/kernel/clock.js';
import type { Logger } from '../../ops/kernel/logger.js';
import type { SnapshotStore } from '../../storage/snapshot-store.js';
import type { Admission } from './admission.js';
import type { ActorBehavior } from './machine.js';
import type { RuntimeMetrics } from './metrics.js';
import type { UncertainWrite } from './persistence.js';
import type { CrashHistory } from './supervision.js';
import type { TransitionCheck } from './transition-check.js';

/** The records the parts of one actor system share: a live actor, what travels to it, and the system around it. */

export type AnyBehavior = ActorBehavior<unknown, { type: string }, unknown, unknown>;

/** A registered kind: its behaviour, and what the runtime compiled from it once, at registration. */
export interface RegisteredKind {
  readonly behavior: AnyBehavior;
  readonly admit: Admission<{ type: string }>;
  readonly transitions: TransitionCheck;
}

export type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: TroupeError };

/**
 * What travels through an nact mailbox. `reply` is set for asks: it settles the asker's promise at most once
 * (our own deadline, not nact's `query`, whose temporary reference ids are 32-bit random and can collide under
 * load). `deadline` (clock time) lets the actor skip work whose asker has already given up.
 */
export interface Envelope {
  readonly message: { type: string };
  readonly reply: ((outcome: Outcome) => void) | undefined;
  readonly deadline: number | undefined;
}

/** One live actor incarnation. Removed from `entries` synchronously when it retires, before nact stops it. */
export interface Entry {
  readonly address: string;
  readonly id: string;
  readonly behavior: AnyBehavior;
  readonly transitions: TransitionCheck;
  readonly log: Logger;
  readonly ref: Ref<Envelope>;
  /** Messages dispatched and not yet finished, including the one being handled. */
  queued: number;
  effectsPending: number;
  effectChain: Promise<void>;
  crashes: CrashHistory;
  idleTimer: NodeJS.Timeout | undefined;
  passivating: boolean;
  retired: boolean;
  idleWaiters: Array<() => void>;
  /** The last write whose outcome the store could not report (it may have committed), until the next load settles it. */
  uncertainWrite: UncertainWrite | undefined;
}

/** What every part of one actor system reads: its ports, its live actors, and whether it is stopping. */
export interface RuntimeState {
  readonly snapshots: SnapshotStore;
  readonly clock: Clock;
  /** The node's logger; each actor logs through a child bound to its kind and id. */
  readonly log: Logger;
  /** Idle time after which an actor leaves memory, unless its kind says otherwise. */
  readonly passivateAfterMs: number;
  readonly metrics: RuntimeMetrics;
  readonly entries: Map<string, Entry>;
  /** Set once `stop` begins: no actor arms an idle timer after that. */
  closing: Promise<void> | undefined;
  /** The system's own `tell`, for effects that message their actor again. */
  tell(address: string, message: unknown): void;
}

/** Thrown from the nact handler after the asker has been answered, so nact's onCrash applies the policy. */
export class ActorCrash extends Error {
  constructor(override readonly cause: unknown, readonly duringStartup: boolean) {
    super('actor crashed');
  }
}

/** Settles an ask, or logs the failure of a tell, whose sender has nobody else to hear it. */
export function answer(entry: Entry, envelope: Envelope, outcome: Outcome, turnLog: Logger = entry.log): void {
  if (envelope.reply !== undefined) {
    envelope.reply(outcome);
    return;
  }
  if (!outcome.ok) {
    const fields = { msgType: envelope.message.type, code: outcome.error.code, reason: outcome.error.message };
    if (outcome.error.status < 500 || outcome.error.code === 'ACTOR_STOPPED') turnLog.info(fields, 'told message not applied');
    else turnLog.warn(fields, 'told message failed');
  }
}
