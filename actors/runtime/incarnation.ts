import { spawn, type ActorSystemRef, type Ref, type SupervisionContext } from 'nact';
import { TroupeError } from '../../ops/kernel/errors.js';
import { lazyChild } from '../../ops/kernel/logger.js';
import { ActorCrash, answer, type Entry, type Envelope, type RegisteredKind, type RuntimeState } from './entry.js';
import { retire, settleIfIdle } from './lifetime.js';
import { unloaded, type Cell } from './persistence.js';
import { decideSupervision, defaultSupervision, noCrashes, type SupervisionPolicy } from './supervision.js';
import { turn } from './turn.js';

/**
 * An actor in nact: its mailbox runs `turn` for one message at a time, its crashes are mapped onto nact's
 * supervision directives by the kind's policy, and what was still queued when it stops is answered.
 */

/** Holds the counter nact names are drawn from, one per system. */
export interface Spawner {
  readonly root: ActorSystemRef;
  spawned: number;
}

export function incarnate(rt: RuntimeState, spawner: Spawner, address: string, kind: RegisteredKind, id: string): Entry {
  const { behavior } = kind;
  spawner.spawned += 1;
  // nact names allow a narrow alphabet; ids are arbitrary, so the name is a counter and the map holds the address.
  const name = `actor-${spawner.spawned}`;
  // nact calls these only for what happens after spawn returns (it is given `initialState`, not a function), so
  // they may name `entry`, which needs the ref spawn returns.
  const handler = (cell: Cell<unknown>, envelope: Envelope): Promise<Cell<unknown>> => handle(rt, entry, cell, envelope);
  const ref = spawn(spawner.root, handler, name, {
    initialState: unloaded,
    onCrash: (_msg, err, ctx) => supervise(rt, entry, err, ctx),
    afterStop: (_cell, ctx) => {
      // nact hands back what was still queued; those askers would otherwise wait for their deadline.
      // nact's types call the mailbox a list of messages; it holds its queue's `{ message, sender }` records.
      const leftovers = ctx.mailbox as unknown as Array<{ message: Envelope }>;
      for (const { message: envelope } of leftovers) {
        answer(entry, envelope, { ok: false, error: new TroupeError('ACTOR_STOPPED', undefined, { address }) });
      }
    },
  }) as Ref<Envelope>;
  const entry: Entry = {
    address, id, behavior, transitions: kind.transitions,
    log: lazyChild(rt.log, { actorKind: behavior.kind, actorId: id }),
    ref,
    queued: 0, effectsPending: 0, effectChain: Promise.resolve(), crashes: noCrashes,
    idleTimer: undefined, passivating: false, retired: false, idleWaiters: [], uncertainWrite: undefined,
  };
  rt.entries.set(address, entry);
  entry.log.debug('actor started');
  return entry;
}

async function handle(rt: RuntimeState, entry: Entry, cell: Cell<unknown>, envelope: Envelope): Promise<Cell<unknown>> {
  try {
    return await turn(rt, entry, cell, envelope);
  } catch (err) {
    // `turn` answers before it throws an ActorCrash; anything else escaped it, and the asker must not hang.
    if (!(err instanceof ActorCrash)) {
      entry.log.error({ err, msgType: envelope.message.type }, 'actor turn failed');
      answer(entry, envelope, { ok: false, error: new TroupeError('INTERNAL') });
    }
    throw err;
  } finally {
    entry.queued -= 1;
    settleIfIdle(rt, entry);
  }
}

/** nact's answers to a crash, of which the runtime uses three. */
type Directives = SupervisionContext<Envelope, ActorSystemRef>;

function supervise(rt: RuntimeState, entry: Entry, err: unknown, ctx: Directives): Directives['stop'] {
  const duringStartup = err instanceof ActorCrash && err.duringStartup;
  // A behavior that cannot even start would fail the same way on every restart (Akka: startup failure stops).
  const policy: SupervisionPolicy = duringStartup ? { kind: 'stop' } : entry.behavior.supervision ?? defaultSupervision;
  const { directive, history } = decideSupervision(entry.crashes, policy, rt.clock.now());
  entry.crashes = history;
  entry.log.warn({ directive, policy: policy.kind }, 'actor crashed');
  switch (directive) {
    case 'resume': return ctx.resume;
    // nact's reset puts back `initialState` (unloaded): the next message rehydrates from the last snapshot.
    case 'restart': return ctx.reset;
    case 'stop':
      retire(rt, entry, 'crashed', false);
      return ctx.stop;
  }
}
