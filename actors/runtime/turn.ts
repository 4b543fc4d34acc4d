import { performance } from 'node:perf_hooks';
import { TroupeError } from '../../ops/kernel/errors.js';
import { lazyChild, type Logger } from '../../ops/kernel/logger.js';
import { cellAfterFailedSave, projectionOf } from './commit.js';
import { scheduleEffects, settleUncertainWrite } from './effects.js';
import { ActorCrash, answer, type Entry, type Envelope, type Outcome, type RuntimeState } from './entry.js';
import type { Decision } from './machine.js';
import type { MessageOutcome } from './metrics.js';
import { persist, rehydrate, unloaded, type Cell, type LoadedCell } from './persistence.js';

/**
 * One message, the hottest code of a node: load the state if needed, decide, save the change fenced by its version,
 * reply, then schedule the effects. Nothing is answered before the new state is durable (DESIGN rule 2).
 */

/** Who one turn answers, and the log its lines go to. */
interface Turn {
  readonly rt: RuntimeState;
  readonly entry: Entry;
  readonly envelope: Envelope;
  readonly log: Logger;
}

function finish(t: Turn, outcome: Outcome, counted: MessageOutcome): void {
  t.rt.metrics.handled(t.entry.behavior.kind, counted);
  answer(t.entry, t.envelope, outcome, t.log);
}

/** Returns the cell nact keeps for the next message; throws an ActorCrash (after answering) for the supervisor. */
export async function turn(rt: RuntimeState, entry: Entry, cell: Cell<unknown>, envelope: Envelope, mayGuess = true): Promise<Cell<unknown>> {
  const { message } = envelope;
  const t: Turn = { rt, entry, envelope, log: lazyChild(entry.log, { msgType: message.type }) };

  if (envelope.deadline !== undefined && rt.clock.now() > envelope.deadline) {
    // The asker has given up: acting now would change state that nobody is told about.
    finish(t, { ok: false, error: new TroupeError('TRANSPORT_TIMEOUT', undefined, { address: entry.address }) }, 'failed');
    return cell;
  }

  // A message that names an address nothing was written to yet starts from `initial` without a read (decision 0055).
  const guessed = !cell.loaded && mayGuess && entry.uncertainWrite === undefined && entry.behavior.neverWritten?.(message) === true;
  let loaded: LoadedCell<unknown>;
  if (cell.loaded) {
    loaded = cell;
  } else if (guessed) {
    loaded = startFresh(t);
  } else {
    // Awaited in `turn` itself: a helper's extra ticks would let the asker hear of a failed start before the
    // supervisor has stopped the actor.
    let outcome;
    try {
      outcome = await rehydrate(rt.snapshots, entry.address, () => entry.behavior.initial(entry.id), t.log);
    } catch (err) {
      throw startupCrash(t, err);
    }
    if (!outcome.ok) {
      finish(t, { ok: false, error: outcome.error }, 'failed');
      return cell;
    }
    loaded = outcome.cell;
    settleUncertainWrite(rt, entry, loaded, t.log);
  }

  const decision = decideOn(t, loaded);
  // Only a change is checked by the fence; anything else decided on a guessed state is decided again on the stored one.
  if (guessed && (!decision.ok || decision.next === loaded.state)) return turn(rt, entry, unloaded, envelope, false);
  if (!decision.ok) {
    finish(t, { ok: false, error: new TroupeError(decision.code, decision.message, decision.details) }, 'rejected');
    return loaded;
  }
  const { next, effects, reply } = decision;
  if (next === loaded.state) {
    finish(t, { ok: true, value: reply }, 'unchanged');
    scheduleEffects(rt, entry, effects);
    return loaded;
  }

  const previous = loaded.state;
  const from = entry.behavior.machine.statusOf(previous, message);
  const to = entry.behavior.machine.statusOf(next, message);
  if (!entry.transitions.permits(from, message.type, to)) {
    // decide contradicts its own table: a bug, so nothing is saved and the caller learns no more than that.
    t.log.error({ from, to }, 'decide left its transition table; nothing saved');
    finish(t, { ok: false, error: new TroupeError('INTERNAL') }, 'failed');
    return loaded;
  }
  const project = projectionOf(entry.behavior, entry.id, next, previous, effects);
  const persistStarted = performance.now();
  const saved = await persist(rt.snapshots, entry.address, loaded.version, next, project, t.log);
  rt.metrics.persistSeconds(entry.behavior.kind, (performance.now() - persistStarted) / 1000);
  if (!saved.ok) {
    if (saved.stale && guessed) {
      // The guess was wrong (the address had been written after all) and the fence refused it, writing nothing:
      // the same message again, on what is stored. Nobody has been answered yet.
      t.log.debug('address was written before; loading it');
      return turn(rt, entry, unloaded, envelope, false);
    }
    finish(t, { ok: false, error: saved.error }, 'failed');
    return cellAfterFailedSave(rt, entry, loaded, next, effects, saved, t.log);
  }
  t.log.debug({ from, to, fromVersion: loaded.version, toVersion: saved.version }, 'state changed');
  finish(t, { ok: true, value: reply }, 'accepted');
  scheduleEffects(rt, entry, effects);
  return { loaded: true, version: saved.version, state: next };
}

/** The state of an address that was never written: `initial`, without a read. */
function startFresh(t: Turn): LoadedCell<unknown> {
  try {
    return { loaded: true, version: 0, state: t.entry.behavior.initial(t.entry.id) };
  } catch (err) {
    throw startupCrash(t, err);
  }
}

/** `initial` threw: answered here, and a crash at startup, which the supervisor stops rather than restarts. */
function startupCrash(t: Turn, err: unknown): ActorCrash {
  t.log.error({ err }, 'initial state threw');
  finish(t, { ok: false, error: new TroupeError('INTERNAL') }, 'failed');
  return new ActorCrash(err, true);
}

function decideOn(t: Turn, loaded: LoadedCell<unknown>): Decision<unknown, unknown, unknown> {
  const { rt, entry } = t;
  const started = performance.now();
  try {
    return entry.behavior.machine.decide(loaded.state, t.envelope.message, { now: rt.clock.now(), id: entry.id });
  } catch (err) {
    t.log.error({ err }, 'decide threw');
    finish(t, { ok: false, error: new TroupeError('INTERNAL') }, 'failed');
    throw new ActorCrash(err, false);
  } finally {
    rt.metrics.decideSeconds(entry.behavior.kind, (performance.now() - started) / 1000);
  }
}
