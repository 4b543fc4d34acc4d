// Invariant: supervision is a pure function of (crash history, policy, time). Resume and stop ignore history;
// restart allows at most `maxRestarts` restarts inside a sliding `withinMs` window and stops on the next crash,
// while restarts older than the window stop counting. Malformed limits stop rather than loop.
import { expect } from 'chai';
import { decideSupervision, noCrashes, type SupervisionPolicy } from '../../../actors/runtime/supervision.js';

const restart = (maxRestarts: number, withinMs: number): SupervisionPolicy => ({ kind: 'restart', maxRestarts, withinMs });

describe('decideSupervision', () => {
  const cases: Array<{ name: string; history: number[]; policy: SupervisionPolicy; now: number; directive: string; kept: number[] }> = [
    { name: 'resume always resumes', history: [1, 2, 3], policy: { kind: 'resume' }, now: 10, directive: 'resume', kept: [1, 2, 3] },
    { name: 'stop always stops', history: [], policy: { kind: 'stop' }, now: 10, directive: 'stop', kept: [] },
    { name: 'first crash restarts', history: [], policy: restart(2, 1000), now: 5000, directive: 'restart', kept: [5000] },
    { name: 'second crash inside window restarts', history: [4500], policy: restart(2, 1000), now: 5000, directive: 'restart', kept: [4500, 5000] },
    { name: 'crash beyond the limit inside the window stops', history: [4500, 4900], policy: restart(2, 1000), now: 5000, directive: 'stop', kept: [4500, 4900] },
    { name: 'restarts older than the window are forgotten', history: [3000, 3999], policy: restart(2, 1000), now: 5000, directive: 'restart', kept: [5000] },
    { name: 'the window edge is exclusive', history: [4000, 4001], policy: restart(2, 1000), now: 5000, directive: 'restart', kept: [4001, 5000] },
    { name: 'maxRestarts 0 never restarts', history: [], policy: restart(0, 1000), now: 5000, directive: 'stop', kept: [] },
    { name: 'negative limit stops', history: [], policy: restart(-1, 1000), now: 5000, directive: 'stop', kept: [] },
    { name: 'non-finite window stops', history: [], policy: restart(3, Number.NaN), now: 5000, directive: 'stop', kept: [] },
    { name: 'entries from the future (clock stepped back) do not count', history: [9000], policy: restart(1, 1000), now: 5000, directive: 'restart', kept: [5000] },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const { directive, history } = decideSupervision({ restartsAt: c.history }, c.policy, c.now);
      expect(directive).to.equal(c.directive);
      expect(history.restartsAt).to.deep.equal(c.kept);
    });
  }

  it('a crash loop under a restart policy stops after exactly maxRestarts restarts', () => {
    let history = noCrashes;
    const directives: string[] = [];
    for (let now = 0; now < 5; now += 1) {
      const decided = decideSupervision(history, restart(3, 60_000), now);
      history = decided.history;
      directives.push(decided.directive);
    }
    expect(directives).to.deep.equal(['restart', 'restart', 'restart', 'stop', 'stop']);
  });
});
