import { start, stop as stopNact } from 'nact';
import type { Registry } from 'prom-client';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Clock } from '../../ops/kernel/clock.js';
import type { Logger } from '../../ops/kernel/logger.js';
import type { SnapshotStore } from '../../storage/snapshot-store.js';
import type { DeliveryHandler } from '../../transport/port.js';
import { addressOf, parseAddress } from '../../transport/shards.js';
import { compileAdmission } from './admission.js';
import type { AnyBehavior, Entry, RegisteredKind, RuntimeState } from './entry.js';
import { incarnate, type Spawner } from './incarnation.js';
import { passivate } from './lifetime.js';
import type { ActorBehavior } from './machine.js';
import { enqueueAsk, enqueueTell, timeLeftUntil } from './mailbox.js';
import { createRuntimeMetrics, noMetrics, type RuntimeCensus } from './metrics.js';
import { compileTransitionCheck } from './transition-check.js';

/**
 * The actor runtime: the one place that runs nact (decision 0004). nact gives each actor a mailbox that
 * handles one message at a time, supervision through onCrash symbols, and stop; everything durable is ours:
 * an actor loads its snapshot on its first message, and answers a command only after the new state is saved.
 * This file is the system's face: registration, addressing and the public calls. A message enters the mailbox in
 * mailbox.ts; its turn is in turn.ts, its write in commit.ts, its effects in effects.ts; an actor's spawn and crashes
 * are in incarnation.ts, its idle time and passivation in lifetime.ts (decision 0078).
 */

export interface ActorSystemOptions {
  readonly snapshots: SnapshotStore;
  readonly clock: Clock;
  readonly log: Logger;
  /** Idle time after which an actor leaves memory; a kind may override it. */
  readonly passivateAfterMs: number;
  /** Deadline for `deliver` and for `ask` without an explicit one. */
  readonly defaultAskTimeoutMs: number;
  readonly metrics?: Registry;
}

/** A typed handle on one actor address, for code on this node. */
export interface ActorRef<M extends { type: string }, R = unknown> {
  readonly address: string;
  /** Fire and forget: a rejection or failure is logged, never thrown. A malformed message throws at once. */
  tell(message: M): void;
  /** Resolves with the reply once the new state is durable; rejects with a TroupeError. */
  ask(message: M, timeoutMs?: number): Promise<R>;
}

export interface ActorSystem {
  register<S, M extends { type: string }, R, E>(behavior: ActorBehavior<S, M, R, E>): void;
  /** The transport's DeliveryHandler: `ask` until the asker's deadline; a tell gets the default deadline. */
  readonly deliver: DeliveryHandler;
  ask(address: string, message: unknown, timeoutMs?: number): Promise<unknown>;
  tell(address: string, message: unknown): void;
  ref<M extends { type: string }, R = unknown>(kind: string, id: string): ActorRef<M, R>;
  /** Lets the actor finish its mailbox and pending effects, then drops it from memory. */
  passivate(address: string): Promise<void>;
  /** `passivate` for every live actor: shard handover and shutdown. */
  passivateAll(): Promise<void>;
  /** `passivate` for the live actors whose address matches: a cluster node handing one shard over. */
  passivateWhere(matches: (address: string) => boolean): Promise<void>;
  isAlive(address: string): boolean;
  readonly aliveCount: number;
  /** Refuses new messages (SHUTTING_DOWN), drains every actor, then stops nact. */
  stop(): Promise<void>;
}

/** Longer than any address we mint (`kind/uuid`), short enough that a hostile one cannot bloat logs or keys. */
const MAX_ADDRESS_LENGTH = 512;

export function createActorSystem(opts: ActorSystemOptions): ActorSystem {
  const log = opts.log.child({ component: 'actors' });
  const kinds = new Map<string, RegisteredKind>();
  const entries = new Map<string, Entry>();
  const spawner: Spawner = { root: start(), spawned: 0 };
  const rt: RuntimeState = {
    snapshots: opts.snapshots, clock: opts.clock, log: opts.log, passivateAfterMs: opts.passivateAfterMs,
    metrics: opts.metrics === undefined ? noMetrics : createRuntimeMetrics(opts.metrics, censusOf(kinds, entries)),
    entries, closing: undefined, tell,
  };

  function register<S, M extends { type: string }, R, E>(behavior: ActorBehavior<S, M, R, E>): void {
    if (!/^[a-z][a-z0-9-]*$/.test(behavior.kind)) throw new Error(`actor kind must be lower-case words: ${behavior.kind}`);
    if (kinds.has(behavior.kind)) throw new Error(`actor kind registered twice: ${behavior.kind}`);
    if (behavior.project !== undefined && behavior.projectStatement !== undefined) throw new Error(`actor kind has two projections: ${behavior.kind}`);
    const erased: AnyBehavior = behavior;
    kinds.set(behavior.kind, { behavior: erased, admit: compileAdmission(erased), transitions: compileTransitionCheck(erased.machine) });
  }

  /** Checks and addresses a message; throws before any actor exists for it. */
  function admit(address: unknown, message: unknown): { entry: Entry; message: { type: string } } {
    if (rt.closing !== undefined) throw new TroupeError('SHUTTING_DOWN');
    const target = locate(kinds, address);
    let admitted: { type: string };
    try {
      admitted = target.kind.admit(message);
    } catch (err) {
      if (err instanceof TroupeError && err.code === 'INTERNAL') log.error({ err, address: target.address }, 'message validator threw');
      throw err;
    }
    const entry = entries.get(target.address) ?? incarnate(rt, spawner, target.address, target.kind, target.id);
    return { entry, message: admitted };
  }

  async function ask(address: string, message: unknown, timeoutMs = opts.defaultAskTimeoutMs): Promise<unknown> {
    const { entry, message: admitted } = admit(address, message);
    return enqueueAsk(opts.clock, entry, admitted, timeoutMs);
  }

  function tell(address: string, message: unknown): void {
    const { entry, message: admitted } = admit(address, message);
    enqueueTell(entry, admitted);
  }

  const passivateOne = (address: string) => passivate(rt, address);
  const passivateAll = async () => { await Promise.all([...entries.keys()].map(passivateOne)); };

  return {
    register,
    deliver: (address, message, deadline) => ask(address, message, timeLeftUntil(deadline)),
    ask,
    tell,
    ref: <M extends { type: string }, R>(kind: string, id: string): ActorRef<M, R> => {
      const address = addressOf(kind, id);
      return {
        address,
        tell: (message) => tell(address, message),
        ask: (message, timeoutMs) => ask(address, message, timeoutMs) as Promise<R>,
      };
    },
    passivate: passivateOne,
    passivateAll,
    passivateWhere: async (matches) => { await Promise.all([...entries.keys()].filter(matches).map(passivateOne)); },
    isAlive: (address) => entries.has(address),
    get aliveCount() { return entries.size; },
    stop: () => (rt.closing ??= (async () => {
      await passivateAll();
      stopNact(spawner.root);
    })()),
  };
}

function locate(kinds: ReadonlyMap<string, RegisteredKind>, address: unknown): { kind: RegisteredKind; id: string; address: string } {
  if (typeof address !== 'string' || address.length > MAX_ADDRESS_LENGTH) {
    throw new TroupeError('NOT_FOUND', 'no actor at a malformed address');
  }
  let parsed: { kind: string; id: string };
  try {
    parsed = parseAddress(address);
  } catch {
    throw new TroupeError('NOT_FOUND', 'no actor at a malformed address', { address });
  }
  const kind = kinds.get(parsed.kind);
  // A kind unknown here is a routing bug or a node running older code than the sender: nothing can answer.
  if (kind === undefined) throw new TroupeError('NOT_FOUND', `no actor kind "${parsed.kind}" on this node`, { address });
  return { kind, id: parsed.id, address };
}

/** Read when Prometheus scrapes: per kind, its live actors and the messages they hold. */
function censusOf(kinds: ReadonlyMap<string, RegisteredKind>, entries: ReadonlyMap<string, Entry>): RuntimeCensus {
  return () => {
    const tally = new Map<string, { alive: number; mailboxDepth: number }>();
    for (const kind of kinds.keys()) tally.set(kind, { alive: 0, mailboxDepth: 0 });
    for (const entry of entries.values()) {
      const counts = tally.get(entry.behavior.kind);
      if (counts === undefined) continue;
      counts.alive += 1;
      counts.mailboxDepth += entry.queued;
    }
    return tally;
  };
}
