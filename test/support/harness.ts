import { deepStrictEqual } from 'node:assert/strict';
import { TroupeError, type ErrorCode } from '../../ops/kernel/errors.js';
import { compileAdmission, type Admission } from '../../actors/runtime/admission.js';
import { compileTransitionCheck, type TransitionCheck } from '../../actors/runtime/transition-check.js';
import type { ActorBehavior, DecideContext } from '../../actors/runtime/machine.js';

/**
 * Runs one message through a behavior the way the runtime does (admission, `decide`, the table's check of the new
 * status), without a system.
 * For machine table tests. Serialisation is a test invariant: the message, the incoming state, the reply and
 * the resulting state must each survive a JSON round trip unchanged, because in production every one of them
 * crosses the broker or the snapshot table. A Date, a Map, an `undefined` member or a class instance fails here
 * rather than after a rehydration in production. The returned state is the round-tripped one.
 */
export type CommandResult<S, R, E> =
  | { readonly ok: true; readonly reply: R; readonly state: S; readonly effects: readonly E[]; readonly changed: boolean }
  | {
      readonly ok: false;
      readonly rejection: { readonly code: ErrorCode; readonly message: string; readonly details?: Record<string, unknown> };
      readonly state: S;
    };

/** A fixed instant so table tests are deterministic; pass `ctx.now` to drive time. */
export const harnessNow = Date.UTC(2025, 0, 1);

export function runCommand<S, M extends { type: string }, R, E>(
  behavior: ActorBehavior<S, M, R, E>, state: S, message: M | Record<string, unknown>, ctx: Partial<DecideContext> = {},
): CommandResult<S, R, E> {
  const wireMessage = roundTrip(message, 'message');
  const before = roundTrip(state, 'state');
  let admitted: M;
  try {
    admitted = compiledFor(behavior).admit(wireMessage) as M;
  } catch (err) {
    if (err instanceof TroupeError) return { ok: false, rejection: rejectionOf(err), state: before };
    throw err;
  }
  const { machine } = behavior;
  const decision = machine.decide(before, admitted, { now: ctx.now ?? harnessNow, id: ctx.id ?? 'harness-id' });
  if (!decision.ok) {
    const rejection = decision.details === undefined
      ? { code: decision.code, message: decision.message }
      : { code: decision.code, message: decision.message, details: decision.details };
    return { ok: false, rejection, state: before };
  }
  const changed = decision.next !== before;
  if (changed) {
    const from = machine.statusOf(before, admitted);
    const to = machine.statusOf(decision.next, admitted);
    // The runtime would refuse this and answer INTERNAL; in a table test it is the machine's bug, so fail loudly.
    if (!compiledFor(behavior).transitions.permits(from, admitted.type, to)) {
      throw new Error(`${behavior.kind}: ${admitted.type} moved ${from} to ${to}, which its transition table does not allow`);
    }
  }
  return {
    ok: true,
    reply: decision.reply === undefined ? decision.reply : roundTrip(decision.reply, 'reply'),
    state: roundTrip(decision.next, 'resulting state'),
    effects: decision.effects,
    changed,
  };
}

/** What the runtime compiles from a behaviour when its kind is registered; here once per behaviour object. */
interface Compiled { readonly admit: Admission<{ type: string }>; readonly transitions: TransitionCheck }
const compiled = new WeakMap<object, Compiled>();
function compiledFor<S, M extends { type: string }, R, E>(behavior: ActorBehavior<S, M, R, E>): Compiled {
  let found = compiled.get(behavior);
  if (found === undefined) {
    found = { admit: compileAdmission(behavior), transitions: compileTransitionCheck(behavior.machine) };
    compiled.set(behavior, found);
  }
  return found;
}

function rejectionOf(err: TroupeError) {
  return err.details === undefined
    ? { code: err.code, message: err.message }
    : { code: err.code, message: err.message, details: err.details };
}

function roundTrip<T>(value: T, what: string): T {
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error(`${what} does not serialise to JSON`);
  const back = JSON.parse(text) as T;
  deepStrictEqual(back, value, `${what} changes across a JSON round trip`);
  return back;
}
