import { performance } from 'node:perf_hooks';
import { dispatch, spawn, start, stop as stopNact, type Ref } from 'nact';
import type { Registry } from 'prom-client';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Clock } from '../../ops/kernel/clock.js';
import { lazyChild, type Logger } from '../../ops/kernel/logger.js';
import type { Projection, SnapshotStore } from '../../storage/snapshot-store.js';
import type { DeliveryHandler } from '../../transport/port.js';
import { addressOf, parseAddress } from '../../transport/shards.js';
import { compileAdmission, type Admission } from './admission.js';
import type { ActorBehavior, Decision, EffectContext } from './machine.js';
import { createRuntimeMetrics, noMetrics, type MessageOutcome, type RuntimeMetrics } from './metrics.js';
import { isOwnWrite, persist, rehydrate, uncertainWrite, unloaded, type Cell, type LoadedCell, type UncertainWrite } from './persistence.js';
import { compileTransitionCheck, type TransitionCheck } from './transition-check.js';
import { decideSupervision, defaultSupervision, noCrashes, type CrashHistory, type SupervisionPolicy } from './supervision.js';

/**
 * The actor runtime: the one place that runs nact (decision 0004). nact gives each actor a mailbox that
 * handles one message at a time, supervision through onCrash symbols, and stop; everything durable is ours:
 * an actor loads its snapshot on its first message, and answers a command only after the new state is saved.
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

type AnyBehavior = ActorBehavior<unknown, { type: string }, unknown, unknown>;

/** A registered kind: its behaviour, and what the runtime compiled from it once, at registration. */
interface RegisteredKind {
  readonly behavior: AnyBehavior;
  readonly admit: Admission<{ type: string }>;
  readonly transitions: TransitionCheck;
}

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: TroupeError };

/**
 * What travels through an nact mailbox. `reply` is set for asks: it settles the asker's promise at most once
 * (our own deadline, not nact's `query`, whose temporary reference ids are 32-bit random and can collide under
 * load). `deadline` (clock time) lets the actor skip work whose asker has already given up.
 */
interface Envelope {
  readonly message: { type: string };
  readonly reply: ((outcome: Outcome) => void) | undefined;
  readonly deadline: number | undefined;
}

/** One live actor incarnation. Removed from `entries` synchronously when it retires, before nact stops it. */
interface Entry {
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


/** Thrown from the nact handler after the asker has been answered, so nact's onCrash applies the policy. */
class ActorCrash extends Error {
  constructor(override readonly cause: unknown, readonly duringStartup: boolean) {
    super('actor crashed');
  }
}

export function createActorSystem(opts: ActorSystemOptions): ActorSystem {
  const { snapshots, clock } = opts;
  const log = opts.log.child({ component: 'actors' });
  const kinds = new Map<string, RegisteredKind>();
  const entries = new Map<string, Entry>();
  const root = start();
  let spawned = 0;
  let closing: Promise<void> | undefined;

  const metrics: RuntimeMetrics = opts.metrics === undefined ? noMetrics : createRuntimeMetrics(opts.metrics, () => {
    const tally = new Map<string, { alive: number; mailboxDepth: number }>();
    for (const kind of kinds.keys()) tally.set(kind, { alive: 0, mailboxDepth: 0 });
    for (const entry of entries.values()) {
      const counts = tally.get(entry.behavior.kind);
      if (counts === undefined) continue;
      counts.alive += 1;
      counts.mailboxDepth += entry.queued;
    }
    return tally;
  });

  function register<S, M extends { type: string }, R, E>(behavior: ActorBehavior<S, M, R, E>): void {
    if (!/^[a-z][a-z0-9-]*$/.test(behavior.kind)) throw new Error(`actor kind must be lower-case words: ${behavior.kind}`);
    if (kinds.has(behavior.kind)) throw new Error(`actor kind registered twice: ${behavior.kind}`);
    const forms = [behavior.project, behavior.projectSql, behavior.projectStatement].filter((f) => f !== undefined).length;
    if (forms > 1) throw new Error(`actor kind has two projections: ${behavior.kind}`);
    const erased = behavior as unknown as AnyBehavior;
    kinds.set(behavior.kind, { behavior: erased, admit: compileAdmission(erased), transitions: compileTransitionCheck(erased.machine) });
  }

  function locate(address: unknown): { kind: RegisteredKind; id: string; address: string } {
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

  /** Checks and addresses a message; throws before any actor exists for it. */
  function admit(address: unknown, message: unknown): { entry: Entry; message: { type: string } } {
    if (closing !== undefined) throw new TroupeError('SHUTTING_DOWN');
    const target = locate(address);
    let admitted: { type: string };
    try {
      admitted = target.kind.admit(message);
    } catch (err) {
      if (err instanceof TroupeError && err.code === 'INTERNAL') log.error({ err, address: target.address }, 'message validator threw');
      throw err;
    }
    return { entry: entries.get(target.address) ?? incarnate(target.address, target.kind, target.id), message: admitted };
  }

  function enqueue(entry: Entry, envelope: Envelope): void {
    entry.queued += 1;
    disarmIdleTimer(entry);
    dispatch(entry.ref, envelope);
  }

  async function ask(address: string, message: unknown, timeoutMs = opts.defaultAskTimeoutMs): Promise<unknown> {
    const { entry, message: admitted } = admit(address, message);
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
        ok: false, error: new TroupeError('TRANSPORT_TIMEOUT', undefined, { address, timeoutMs: waitMs }),
      }), waitMs);
      enqueue(entry, { message: admitted, reply: settle, deadline: clock.now() + waitMs });
    });
  }

  function tell(address: string, message: unknown): void {
    const { entry, message: admitted } = admit(address, message);
    enqueue(entry, { message: admitted, reply: undefined, deadline: undefined });
  }

  function incarnate(address: string, kind: RegisteredKind, id: string): Entry {
    const { behavior } = kind;
    spawned += 1;
    // nact names allow a narrow alphabet; ids are arbitrary, so the name is a counter and the map holds the address.
    const name = `actor-${spawned}`;
    const entry: Entry = {
      address, id, behavior, transitions: kind.transitions,
      log: lazyChild(opts.log, { actorKind: behavior.kind, actorId: id }),
      ref: undefined as unknown as Ref<Envelope>,
      queued: 0, effectsPending: 0, effectChain: Promise.resolve(), crashes: noCrashes,
      idleTimer: undefined, passivating: false, retired: false, idleWaiters: [], uncertainWrite: undefined,
    };
    const handler = (cell: Cell<unknown>, envelope: Envelope): Promise<Cell<unknown>> => handle(entry, cell, envelope);
    (entry as { ref: Ref<Envelope> }).ref = spawn(root, handler, name, {
      initialState: unloaded,
      onCrash: (_msg, err, ctx) => {
        const duringStartup = err instanceof ActorCrash && err.duringStartup;
        // A behavior that cannot even start would fail the same way on every restart (Akka: startup failure stops).
        const policy: SupervisionPolicy = duringStartup ? { kind: 'stop' } : behavior.supervision ?? defaultSupervision;
        const { directive, history } = decideSupervision(entry.crashes, policy, clock.now());
        entry.crashes = history;
        entry.log.warn({ directive, policy: policy.kind }, 'actor crashed');
        switch (directive) {
          case 'resume': return ctx.resume;
          // nact's reset puts back `initialState` (unloaded): the next message rehydrates from the last snapshot.
          case 'restart': return ctx.reset;
          case 'stop':
            retire(entry, 'crashed', false);
            return ctx.stop;
        }
      },
      afterStop: (_cell, ctx) => {
        // nact hands back what was still queued; those askers would otherwise wait for their deadline.
        const leftovers = ctx.mailbox as unknown as Array<{ message: Envelope }>;
        for (const { message: envelope } of leftovers) {
          answer(entry, envelope, { ok: false, error: new TroupeError('ACTOR_STOPPED', undefined, { address }) });
        }
      },
    }) as Ref<Envelope>;
    entries.set(address, entry);
    entry.log.debug('actor started');
    return entry;
  }

  async function handle(entry: Entry, cell: Cell<unknown>, envelope: Envelope): Promise<Cell<unknown>> {
    try {
      return await turn(entry, cell, envelope);
    } catch (err) {
      // `turn` answers before it throws an ActorCrash; anything else escaped it, and the asker must not hang.
      if (!(err instanceof ActorCrash)) {
        entry.log.error({ err, msgType: envelope.message.type }, 'actor turn failed');
        answer(entry, envelope, { ok: false, error: new TroupeError('INTERNAL') });
      }
      throw err;
    } finally {
      entry.queued -= 1;
      settleIfIdle(entry);
    }
  }

  /** One message: load if needed, decide, persist, reply, schedule effects. Returns the cell nact keeps. */
  async function turn(entry: Entry, cell: Cell<unknown>, envelope: Envelope, mayGuess = true): Promise<Cell<unknown>> {
    const { behavior, id, address } = entry;
    const { message } = envelope;
    const turnLog = lazyChild(entry.log, { msgType: message.type });
    const finish = (outcome: Outcome, counted: MessageOutcome) => {
      metrics.handled(behavior.kind, counted);
      answer(entry, envelope, outcome, turnLog);
    };

    if (envelope.deadline !== undefined && clock.now() > envelope.deadline) {
      // The asker has given up: acting now would change state that nobody is told about.
      finish({ ok: false, error: new TroupeError('TRANSPORT_TIMEOUT', undefined, { address }) }, 'failed');
      return cell;
    }

    let loaded: LoadedCell<unknown>;
    // A message that names an address nothing was written to yet starts from `initial` without a read (decision 0055).
    const guessed = !cell.loaded && mayGuess && entry.uncertainWrite === undefined && behavior.neverWritten?.(message) === true;
    if (cell.loaded) {
      loaded = cell;
    } else if (guessed) {
      try {
        loaded = { loaded: true, version: 0, state: behavior.initial(id) };
      } catch (err) {
        turnLog.error({ err }, 'initial state threw');
        finish({ ok: false, error: new TroupeError('INTERNAL') }, 'failed');
        throw new ActorCrash(err, true);
      }
    } else {
      let outcome;
      try {
        outcome = await rehydrate(snapshots, address, () => behavior.initial(id), turnLog);
      } catch (err) {
        turnLog.error({ err }, 'initial state threw');
        finish({ ok: false, error: new TroupeError('INTERNAL') }, 'failed');
        throw new ActorCrash(err, true);
      }
      if (!outcome.ok) {
        finish({ ok: false, error: outcome.error }, 'failed');
        return cell;
      }
      loaded = outcome.cell;
      settleUncertainWrite(entry, loaded, turnLog);
    }

    let decision: Decision<unknown, unknown, unknown>;
    const decideStarted = performance.now();
    try {
      decision = behavior.machine.decide(loaded.state, message, { now: clock.now(), id });
    } catch (err) {
      turnLog.error({ err }, 'decide threw');
      finish({ ok: false, error: new TroupeError('INTERNAL') }, 'failed');
      throw new ActorCrash(err, false);
    } finally {
      metrics.decideSeconds(behavior.kind, (performance.now() - decideStarted) / 1000);
    }

    // Only a change is checked by the fence; anything else decided on a guessed state is decided again on the stored one.
    if (guessed && (!decision.ok || decision.next === loaded.state)) return turn(entry, unloaded, envelope, false);
    if (!decision.ok) {
      finish({ ok: false, error: new TroupeError(decision.code, decision.message, decision.details) }, 'rejected');
      return loaded;
    }
    const { next, effects, reply } = decision;
    if (next === loaded.state) {
      finish({ ok: true, value: reply }, 'unchanged');
      scheduleEffects(entry, effects);
      return loaded;
    }

    const previous = loaded.state;
    const from = behavior.machine.statusOf(previous, message);
    const to = behavior.machine.statusOf(next, message);
    if (!entry.transitions.permits(from, message.type, to)) {
      // decide contradicts its own table: a bug, so nothing is saved and the caller learns no more than that.
      turnLog.error({ from, to }, 'decide left its transition table; nothing saved');
      finish({ ok: false, error: new TroupeError('INTERNAL') }, 'failed');
      return loaded;
    }
    const project: Projection | undefined = behavior.projectStatement !== undefined
      ? { statement: (statement) => behavior.projectStatement!(statement, id, next, previous, effects) }
      : behavior.projectSql !== undefined
      ? { sql: (tx) => behavior.projectSql!(tx, id, next, previous, effects) }
      : behavior.project === undefined
        ? undefined
        : (trx) => behavior.project!(trx, id, next, previous, effects);
    const persistStarted = performance.now();
    const saved = await persist(snapshots, address, loaded.version, next, project, turnLog);
    metrics.persistSeconds(behavior.kind, (performance.now() - persistStarted) / 1000);
    if (!saved.ok && saved.stale && guessed) {
      // The guess was wrong (the address had been written after all) and the fence refused it, writing nothing:
      // the same message again, on what is stored. Nobody has been answered yet.
      turnLog.debug('address was written before; loading it');
      return turn(entry, unloaded, envelope, false);
    }
    if (!saved.ok) {
      finish({ ok: false, error: saved.error }, 'failed');
      if (saved.stale) {
        // Another owner wrote this address: our copy is out of date and must not answer anything more.
        turnLog.warn({ version: loaded.version }, 'snapshot written by another owner; stopping');
        retire(entry, 'stale', true);
        return loaded;
      }
      // A failure of the store itself (a lost connection, a timeout) leaves the write's outcome unknown: it may have
      // committed. Keeping the old state would make the retry that follows meet its own write as another owner's
      // (issue 30: 503 STORAGE_STALE_VERSION, then 409 for a completion that was recorded). The next message reads
      // what is stored instead, and the machine answers a repeat of what is there as done.
      if (saved.error.status >= 500) {
        turnLog.info({ version: loaded.version, code: saved.error.code }, 'write outcome unknown; the next message reloads the snapshot');
        entry.uncertainWrite = uncertainWrite(loaded.version + 1, next, effects);
        return unloaded;
      }
      return loaded;
    }
    turnLog.debug({ from, to, fromVersion: loaded.version, toVersion: saved.version }, 'state changed');
    finish({ ok: true, value: reply }, 'accepted');
    scheduleEffects(entry, effects);
    return { loaded: true, version: saved.version, state: next };
  }

  /**
   * The stored snapshot is this node's own uncertain write when it has that write's version and its state (compared
   * as values: Postgres' jsonb keeps no key order): the write committed, so its effects (announcements to live streams among them) are owed and run now, once.
   * Effects carry their own keys (DESIGN rule 6), so one that had run before the failure does nothing twice.
   */
  function settleUncertainWrite(entry: Entry, loaded: LoadedCell<unknown>, turnLog: Logger): void {
    const uncertain = entry.uncertainWrite;
    if (uncertain === undefined) return;
    entry.uncertainWrite = undefined;
    if (!isOwnWrite(uncertain, loaded)) return;
    turnLog.info({ version: loaded.version }, 'a write whose outcome was unknown had committed; its effects run now');
    scheduleEffects(entry, uncertain.effects);
  }

  function answer(entry: Entry, envelope: Envelope, outcome: Outcome, turnLog: Logger = entry.log): void {
    if (envelope.reply !== undefined) {
      envelope.reply(outcome);
      return;
    }
    // A told message has nobody to hear its outcome, so the log is where it goes.
    if (!outcome.ok) {
      const fields = { msgType: envelope.message.type, code: outcome.error.code, reason: outcome.error.message };
      if (outcome.error.status < 500 || outcome.error.code === 'ACTOR_STOPPED') turnLog.info(fields, 'told message not applied');
      else turnLog.warn(fields, 'told message failed');
    }
  }

  /**
   * Effects run after the reply, one batch after another per actor (so they keep the order of the state changes
   * that produced them), but outside the mailbox: an effect that asks another actor which asks back cannot
   * deadlock this one. Passivation waits for them.
   */
  function scheduleEffects(entry: Entry, effects: readonly unknown[]): void {
    const run = entry.behavior.afterPersist;
    if (run === undefined || effects.length === 0) return;
    entry.effectsPending += 1;
    disarmIdleTimer(entry);
    const ctx: EffectContext<{ type: string }> = {
      id: entry.id, address: entry.address, log: entry.log,
      tellSelf: (message) => {
        try {
          tell(entry.address, message);
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
        settleIfIdle(entry);
      });
  }

  function settleIfIdle(entry: Entry): void {
    if (entry.queued > 0 || entry.effectsPending > 0) return;
    for (const wake of entry.idleWaiters.splice(0)) wake();
    if (!entry.retired && !entry.passivating && closing === undefined) armIdleTimer(entry);
  }

  function armIdleTimer(entry: Entry): void {
    disarmIdleTimer(entry);
    const idleMs = entry.behavior.passivateAfterMs ?? opts.passivateAfterMs;
    entry.idleTimer = setTimeout(() => {
      entry.idleTimer = undefined;
      if (entry.queued === 0 && entry.effectsPending === 0) retire(entry, 'idle', true);
    }, idleMs);
    // An idle actor must not keep the process alive.
    entry.idleTimer.unref?.();
  }

  function disarmIdleTimer(entry: Entry): void {
    if (entry.idleTimer !== undefined) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
  }

  /**
   * Takes the actor out of the address map at once, so the next message for its address spawns a fresh
   * incarnation that rehydrates; then stops it in nact (unless nact is already stopping it after a crash).
   */
  function retire(entry: Entry, reason: 'idle' | 'passivated' | 'stale' | 'crashed', stopInNact: boolean): void {
    if (entry.retired) return;
    entry.retired = true;
    if (entries.get(entry.address) === entry) entries.delete(entry.address);
    disarmIdleTimer(entry);
    for (const wake of entry.idleWaiters.splice(0)) wake();
    if (stopInNact) stopNact(entry.ref);
    entry.log.debug({ reason }, 'actor stopped');
  }

  async function passivate(address: string): Promise<void> {
    const entry = entries.get(address);
    if (entry === undefined) return;
    entry.passivating = true;
    disarmIdleTimer(entry);
    while (!entry.retired && (entry.queued > 0 || entry.effectsPending > 0)) {
      await new Promise<void>((wake) => entry.idleWaiters.push(wake));
    }
    retire(entry, 'passivated', true);
  }

  async function passivateAll(): Promise<void> {
    await Promise.all([...entries.keys()].map(passivate));
  }

  async function passivateWhere(matches: (address: string) => boolean): Promise<void> {
    await Promise.all([...entries.keys()].filter(matches).map(passivate));
  }

  function stop(): Promise<void> {
    closing ??= (async () => {
      await passivateAll();
      stopNact(root);
    })();
    return closing;
  }

  return {
    register,
    deliver: (address, message, deadline) => ask(address, message, deadline === undefined ? undefined : Math.max(1, deadline - Date.now())),
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
    passivate,
    passivateAll,
    passivateWhere,
    isAlive: (address) => entries.has(address),
    get aliveCount() { return entries.size; },
    stop,
  };
}
