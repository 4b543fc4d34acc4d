import type { Machine } from './machine.js';

/**
 * The runtime's half of "the table is the machine": before a new state is saved, its status must be one the
 * table lists for the status and message it came from. Compiled once per kind into nested maps, so the check on
 * every changing turn is three lookups and no allocation.
 */
export interface TransitionCheck {
  /** Whether `message` may move a state from status `from` to status `to`. */
  permits(from: string, msgType: string, to: string): boolean;
}

export function compileTransitionCheck(machine: Pick<Machine<never, { type: string }, never, never>, 'transitions'>): TransitionCheck {
  const rows = new Map<string, Map<string, ReadonlySet<string>>>();
  for (const [from, row] of Object.entries(machine.transitions)) {
    const cells = new Map<string, ReadonlySet<string>>();
    for (const [msgType, targets] of Object.entries(row as Record<string, readonly string[] | undefined>)) {
      if (targets !== undefined) cells.set(msgType, new Set(targets));
    }
    rows.set(from, cells);
  }
  return { permits: (from, msgType, to) => rows.get(from)?.get(msgType)?.has(to) === true };
}
