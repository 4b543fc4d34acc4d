import type { Knex } from 'knex';
import type { FollowUp, TransitionStatement } from '../../storage/transition-statement.js';
import type { ErrorCode } from '../../ops/kernel/errors.js';
import type { Logger } from '../../ops/kernel/logger.js';
import type { SupervisionPolicy } from './supervision.js';

/**
 * An actor kind is a pure state machine plus the effects it asks for. `decide` never touches I/O: it returns
 * the next state, the effects to run once that state is durable, and the reply; or a typed rejection that
 * changes nothing. The runtime persists `next` (snapshot + `project` in one transaction), then replies, then
 * runs `afterPersist` with the effects. Returning the same `state` object means "nothing changed": no write.
 */
export type Decision<S, E, R> =
  | { readonly ok: true; readonly next: S; readonly effects: readonly E[]; readonly reply: R }
  | Rejection;

/** A refusal: the caller hears the code and message, and the state stays exactly as it was. */
export interface Rejection {
  readonly ok: false;
  readonly code: ErrorCode;
  readonly message: string;
  readonly details?: Record<string, unknown>;
}

export interface DecideContext {
  /** Milliseconds since the epoch, from the injected clock so tests can drive time. */
  readonly now: number;
  /** The actor's id (the part of the address after `kind/`). */
  readonly id: string;
}

export interface EffectContext<M> {
  readonly id: string;
  readonly address: string;
  /** Sends a message to this same actor later (timers, retries); goes through the normal mailbox. */
  tellSelf(message: M): void;
  /** The actor's logger (`{actorKind, actorId}` bound). */
  readonly log: Logger;
}

/**
 * A transition table: for each status, the message types it accepts and the statuses they may lead to. A pair
 * that is absent is refused and changes nothing.
 */
export type TransitionTable<Status extends string, MsgType extends string> = {
  readonly [S in Status]: Partial<Record<MsgType, readonly Status[]>>;
};

/**
 * A state machine as data (DESIGN rule 1): its statuses, its messages, the table of where each message may lead
 * from each status, and the pure transition. The runtime refuses to persist a `next` whose status the table does
 * not list for the status and message it came from; tests walk every status × message pair from the same table.
 */
export interface Machine<S, M extends { type: string }, E, R, Status extends string = string> {
  readonly statuses: readonly Status[];
  readonly messageTypes: readonly M['type'][];
  readonly transitions: TransitionTable<Status, M['type']>;
  /**
   * The row of the table a message is decided on. Most machines read `state.status`; one whose state holds many
   * things (the org's credentials) reads the status of the one the message names, in the old state and the new.
   */
  statusOf(state: S, message: M): Status;
  decide(state: S, message: M, ctx: DecideContext): Decision<S, E, R>;
}

/** A JSON Schema, as the `schemas/` room writes them (`as const` object literals). */
export type MessageSchema = Readonly<Record<string, unknown>>;

export interface ActorBehavior<S, M extends { type: string }, R = unknown, E = never> {
  readonly kind: string;
  initial(id: string): S;
  readonly machine: Machine<S, M, E, R>;
  /** Read-model writes that must commit with the snapshot. */
  project?(trx: Knex.Transaction, id: string, next: S, previous: S, effects: readonly E[]): Promise<void>;
  /**
   * The same as parts of the snapshot's own statement, for the hottest kind (decision 0055): it adds its writes to
   * `statement` and returns the statements that must follow it in the transaction, if any. A kind has `project` or
   * `projectStatement`, not both.
   */
  projectStatement?(statement: TransitionStatement, id: string, next: S, previous: S, effects: readonly E[]): FollowUp | undefined;
  /**
   * Whether `message`, arriving for an actor not in memory, names an address that cannot have been written yet (an id
   * its sender has just made up): the runtime then starts from `initial` without reading the snapshot (decision 0055).
   * A wrong answer costs a round trip, never a state: the first save's version fence refuses it, and the message is
   * decided again on the stored state.
   */
  neverWritten?(message: M): boolean;
  /** Runs after the state is durable and the reply sent; must be idempotent (a crash may replay it). */
  afterPersist?(effects: readonly E[], ctx: EffectContext<M>): Promise<void>;
  /**
   * The JSON Schema every incoming message must meet before `decide` sees it (messages cross the broker, so any of
   * them may be hostile). Declared once per kind; the runtime compiles it when the kind is registered.
   */
  readonly messages: MessageSchema;
  readonly supervision?: SupervisionPolicy;
  /** Overrides the system-wide idle time after which this kind is passivated. */
  readonly passivateAfterMs?: number;
}

export const accept = <S, E, R>(next: S, reply: R, effects: readonly E[] = []): Decision<S, E, R> =>
  ({ ok: true, next, effects, reply });

export const reject = (code: ErrorCode, message: string, details?: Record<string, unknown>): Rejection =>
  details === undefined ? { ok: false, code, message } : { ok: false, code, message, details };
