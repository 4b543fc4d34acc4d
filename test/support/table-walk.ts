import { expect } from 'chai';
import type { ActorBehavior, DecideContext } from '../../actors/runtime/machine.js';
import { runCommand, type CommandResult } from './harness.js';

/**
 * Walks a machine's table the way DESIGN rule 1 asks: one test per status × message pair, with the statuses, the
 * message types and each pair's targets read from the machine itself. A pair the table does not hold must be
 * refused and leave the state exactly as it was; a message the table takes must land on one of the pair's targets
 * (runCommand also fails any change the table does not list). A last test checks that every target the table
 * lists was reached by some walked message from that very pair, so the table says neither less nor more than the
 * code does.
 */
export interface TableWalk<S, M> {
  /** Why each pair is walked from these states (the test title). */
  readonly title: string;
  /** States in `status` to walk from; more than one where a cell's target depends on the state. */
  statesIn(status: string): readonly S[];
  /** Messages of `type` to send to `state`; more than one where a cell's target depends on the message. */
  messagesOf(type: string, state: S): readonly (M | Record<string, unknown>)[];
  readonly ctx?: Partial<DecideContext>;
  /** The code a pair the table does not hold is refused with. */
  refusedWith?(from: string, type: string): string;
  /** Further checks on every accepted message (the pair's own invariants). */
  accepted?(result: Extract<CommandResult<S, unknown, unknown>, { ok: true }>, from: string, message: M): void;
}

export function walkTable<S, M extends { type: string }, R, E>(behavior: ActorBehavior<S, M, R, E>, walk: TableWalk<S, M>): void {
  const { machine } = behavior;
  const reached = new Set<string>();
  const key = (from: string, type: string, to: string) => `${from} × ${type} → ${to}`;

  describe(walk.title, () => {
    for (const from of machine.statuses) {
      for (const type of machine.messageTypes) {
        const targets = machine.transitions[from]?.[type];
        it(`${from} × ${type} → ${targets === undefined ? 'refused' : targets.join(' | ')}`, () => {
          const states = walk.statesIn(from);
          expect(states, `fixtures for ${from}`).to.not.be.empty;
          for (const state of states) {
            for (const message of walk.messagesOf(type, state)) {
              expect(machine.statusOf(state, message as M), 'a fixture stands in the status it is walked from').to.equal(from);
              const result = runCommand(behavior, state, message, walk.ctx);
              if (targets === undefined) {
                expect(result.ok, `refused: ${JSON.stringify(message)}`).to.equal(false);
                if (!result.ok && walk.refusedWith) expect(result.rejection.code).to.equal(walk.refusedWith(from, type));
                expect(result.state).to.deep.equal(state);
                continue;
              }
              if (!result.ok) continue;
              const to = machine.statusOf(result.state, message as M);
              expect(targets, `${JSON.stringify(message)} moved ${from} to ${to}`).to.include(to);
              reached.add(key(from, type, to));
              walk.accepted?.(result as Extract<CommandResult<S, unknown, unknown>, { ok: true }>, from, message as M);
            }
          }
        });
      }
    }

    it('reaches every target the table lists, each from its own pair', () => {
      const listed = machine.statuses.flatMap((from) => machine.messageTypes.flatMap((type) =>
        (machine.transitions[from]?.[type] ?? []).map((to) => key(from, type, to))));
      expect(listed.filter((move) => !reached.has(move))).to.deep.equal([]);
    });
  });
}
