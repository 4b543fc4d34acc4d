import type { DecideContext, Decision, Machine, Rejection, TransitionTable } from './machine.js';

/**
 * Machines as data, after XState's `createMachine` + `transition`: a machine is a table from status and message
 * type to a cell, and a cell holds the statuses the message may lead to together with the code that takes it
 * there. `decide` is the same for every machine: find the cell, or refuse; then run the cell's code. There is no
 * second `switch` over message types that could drift from the table, and the runtime refuses any new status the
 * cell does not list (./transition-check.ts).
 */

/** What a cell's code is told besides the state and the message: where the state stands and where it may go. */
export interface Step<Status extends string, To> extends DecideContext {
  readonly from: Status;
  /** The cell's target (`go`), or the targets it chooses from (`choose`). */
  readonly to: To;
}

/**
 * The code of one cell. `To` narrows the target, so a cell that ends sessions can say its target is terminal;
 * `In` narrows the state to what its row holds (see `StateIn`).
 */
export type Take<S, M, E, R, Status extends string, To, In = S> =
  (state: In, message: M, step: Step<Status, To>) => Decision<S, E, R>;

/**
 * The state as one row of the table sees it. A state that is a union told apart by `status` (a gate that is
 * `absent` has no fields) narrows to the members in that status, so code placed in a row needs no casts and code
 * written for existing gates cannot be placed in the `absent` row. Any other state is the whole state.
 */
export type StateIn<S, F extends string> = S extends { readonly status: infer X } ? (F extends X ? S : never) : S;

/** One cell of a table: where a message may lead from one status, and the code that takes it there. */
export interface Transition<S, M, E, R, Status extends string, In = S> {
  readonly targets: readonly Status[];
  readonly take: (state: In, message: M, ctx: DecideContext, from: Status) => Decision<S, E, R>;
}

/**
 * A cell with one target: the code moves the state to `step.to`, or (a replay, a query) answers and leaves the
 * state as it is.
 */
export function go<S, M, E, R, Status extends string, To extends Status, In = S>(
  to: To, take: Take<S, M, E, R, Status, To, In>,
): Transition<S, M, E, R, Status, In> {
  return { targets: [to], take: (state, message, ctx, from) => take(state, message, { now: ctx.now, id: ctx.id, from, to }) };
}

/**
 * A cell whose code picks its target from `step.to`: the message names it (a worker reporting a status), or the
 * state decides (a lost lease re-offers a session or fails it). Each cell lists only the choices open there.
 */
export function choose<S, M, E, R, Status extends string, To extends Status, In = S>(
  to: readonly [To, ...To[]], take: Take<S, M, E, R, Status, readonly To[], In>,
): Transition<S, M, E, R, Status, In> {
  return { targets: to, take: (state, message, ctx, from) => take(state, message, { now: ctx.now, id: ctx.id, from, to }) };
}

export type MachineTable<S, M extends { type: string }, E, R, Status extends string> = {
  readonly [F in Status]: { readonly [T in M['type']]?: Transition<S, Extract<M, { type: T }>, E, R, Status, StateIn<S, F>> };
};

export interface MachineSpec<S, M extends { type: string }, E, R, Status extends string> {
  readonly statuses: readonly Status[];
  readonly messageTypes: readonly M['type'][];
  /** The row a message is decided on (see `Machine.statusOf`). */
  statusOf(state: S, message: M): Status;
  /**
   * Answers that come before the table: a message about another org's resource finds nothing, whatever the
   * status. Returns undefined to go on to the table.
   */
  readonly screen?: (state: S, message: M) => Rejection | undefined;
  readonly table: MachineTable<S, M, E, R, Status>;
  /** The answer to a status × message pair the table does not hold; the state stays as it was. */
  refuse(from: Status, message: M, state: S): Rejection;
}

/**
 * Builds a machine from its spec, checking the table once (every message type and target is one the machine
 * declares; a mistake throws when the module loads) and indexing its cells for `decide`.
 */
export function defineMachine<S, M extends { type: string }, E, R, Status extends string>(
  spec: MachineSpec<S, M, E, R, Status>,
): Machine<S, M, E, R, Status> {
  const cells = new Map<string, Map<string, Transition<S, M, E, R, Status>>>();
  const transitions: Record<string, Record<string, readonly Status[]>> = {};
  for (const from of spec.statuses) {
    const row = new Map<string, Transition<S, M, E, R, Status>>();
    transitions[from] = {};
    for (const [msgType, cell] of Object.entries(spec.table[from] as Record<string, Transition<S, M, E, R, Status> | undefined>)) {
      if (cell === undefined) continue;
      if (!spec.messageTypes.includes(msgType)) throw new Error(`transition table names an unknown message: ${from} × ${msgType}`);
      const unknown = cell.targets.filter((to) => !spec.statuses.includes(to));
      if (unknown.length > 0) throw new Error(`transition table names an unknown status: ${from} × ${msgType} → ${unknown.join(', ')}`);
      row.set(msgType, cell);
      transitions[from][msgType] = cell.targets;
    }
    cells.set(from, row);
  }
  const { screen, statusOf, refuse } = spec;
  return {
    statuses: spec.statuses,
    messageTypes: spec.messageTypes,
    transitions: transitions as TransitionTable<Status, M['type']>,
    statusOf,
    decide(state, message, ctx) {
      const screened = screen?.(state, message);
      if (screened !== undefined) return screened;
      const from = statusOf(state, message);
      const cell = cells.get(from)?.get(message.type);
      return cell === undefined ? refuse(from, message, state) : cell.take(state, message, ctx, from);
    },
  };
}
