import { Writable } from 'node:stream';
import { pino } from 'pino';
import { accept, reject, type ActorBehavior } from '../../../actors/runtime/machine.js';
import { defineMachine, go, type Take } from '../../../actors/runtime/define-machine.js';
import { createActorSystem, type ActorSystemOptions } from '../../../actors/runtime/system.js';
import { systemClock } from '../../../ops/kernel/clock.js';
import { MemorySnapshotStore } from '../../support/memory-snapshot-store.js';

/**
 * A test-only machine for the runtime's tests: a counter that can be switched off and on. Small enough to
 * walk completely, rich enough to have a status table, a query, an effect and input that needs validating.
 * - off: counting is refused; `toggle` switches on.
 * - on: `increment` adds `by` (default 1) and emits `counter.incremented`; `toggle` switches off.
 * - `read` answers in both statuses without changing anything (no write).
 */
export type CounterStatus = 'off' | 'on';
export interface CounterState { readonly status: CounterStatus; readonly count: number }

export type CounterMsg =
  | { readonly type: 'counter.increment'; readonly by?: number }
  | { readonly type: 'counter.toggle' }
  | { readonly type: 'counter.read' };

export type CounterEffect = { readonly type: 'counter.incremented'; readonly count: number };
export type CounterReply = { readonly status: CounterStatus; readonly count: number };

export const counterStatuses: readonly CounterStatus[] = ['off', 'on'];
export const counterMessages: readonly CounterMsg[] = [
  { type: 'counter.increment', by: 2 }, { type: 'counter.toggle' }, { type: 'counter.read' },
];

/** Bounds a hostile `by` so the count stays a safe integer. */
const MAX_STEP = 1000;

const counterMessageSchema = {
  oneOf: [
    {
      type: 'object', required: ['type'],
      properties: { type: { const: 'counter.increment' }, by: { type: 'integer', minimum: 1, maximum: MAX_STEP } },
    },
    { type: 'object', required: ['type'], properties: { type: { enum: ['counter.toggle', 'counter.read'] } } },
  ],
} as const;

type On<T extends CounterMsg['type'], To = CounterStatus> =
  Take<CounterState, Extract<CounterMsg, { type: T }>, CounterEffect, CounterReply, CounterStatus, To>;

const read: On<'counter.read'> = (state) => accept(state, { status: state.status, count: state.count });

const toggle: On<'counter.toggle'> = (state, _msg, { to }) => {
  const next: CounterState = { ...state, status: to };
  return accept(next, { status: next.status, count: next.count });
};

const increment: On<'counter.increment'> = (state, msg) => {
  const next: CounterState = { ...state, count: state.count + (msg.by ?? 1) };
  return accept(next, { status: next.status, count: next.count }, [{ type: 'counter.incremented', count: next.count }]);
};

export const counterMachine = defineMachine<CounterState, CounterMsg, CounterEffect, CounterReply, CounterStatus>({
  statuses: counterStatuses,
  messageTypes: ['counter.increment', 'counter.toggle', 'counter.read'],
  statusOf: (state) => state.status,
  table: {
    off: { 'counter.toggle': go('on', toggle), 'counter.read': go('off', read) },
    on: { 'counter.increment': go('on', increment), 'counter.toggle': go('off', toggle), 'counter.read': go('on', read) },
  },
  refuse: (from, msg) => reject('ILLEGAL_TRANSITION', `${msg.type} is not allowed while ${from}`, { status: from, msgType: msg.type }),
});

export const counterBehavior: ActorBehavior<CounterState, CounterMsg, CounterReply, CounterEffect> = {
  kind: 'counter',
  initial: () => ({ status: 'on', count: 0 }),
  messages: counterMessageSchema,
  machine: counterMachine,
};

/** Resolves once `condition` holds, checking after each turn of the event loop; fails the test after `limitMs`. */
export async function eventually(condition: () => boolean, what: string, limitMs = 2000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > limitMs) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The rejection of a promise, so a test can assert on its code; fails if the promise resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<{ code?: string; message: string; details?: unknown }> {
  let value: unknown;
  try {
    value = await promise;
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
}

/** A system over a fresh memory store, with debug logs captured as parsed JSON lines. */
export function counterSystem(overrides: Partial<ActorSystemOptions> = {}, behavior: ActorBehavior<CounterState, CounterMsg, CounterReply, CounterEffect> = counterBehavior) {
  const store = new MemorySnapshotStore();
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const system = createActorSystem({
    snapshots: store, clock: systemClock, log: pino({ level: 'debug' }, sink),
    passivateAfterMs: 60_000, defaultAskTimeoutMs: 2_000, ...overrides,
  });
  system.register(behavior);
  const counter = (id: string) => system.ref<CounterMsg, CounterReply>('counter', id);
  return { system, store, logs, counter };
}
