// Invariant: `troupe session watch` prints a status change after the output kept before it, although the change
// arrives first (output frames are relayed up to 100 ms late on another stream), and never holds a change longer
// than its bound.
import { expect } from 'chai';
import sinon from 'sinon';
import { StatusAfterOutput } from '../../../ops/cli/session-watch.js';

const change = (status: string, atMs: number) => ({
  sessionId: 's1', orgId: 'o1', projectId: 'p1', previousStatus: 'x', status, epoch: 1, at: new Date(atMs).toISOString(),
});

describe('session watch: a status change waits for the output kept before it', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => { clock = sinon.useFakeTimers({ now: 10_000 }); });
  afterEach(() => clock.restore());

  it('prints the change once output kept after it is printed, and keeps the changes in order', () => {
    const printed: string[] = [];
    const order = new StatusAfterOutput(400, (e) => printed.push(e.status));
    order.add(change('finalizing', 10_000));
    order.add(change('completed', 10_020));
    expect(printed).to.deep.equal([]);
    order.outputSeen(new Date(9_990).toISOString());
    expect(printed, 'output kept before the change releases nothing').to.deep.equal([]);
    order.outputSeen(new Date(10_010).toISOString());
    expect(printed).to.deep.equal(['finalizing']);
    clock.tick(399);
    expect(printed).to.deep.equal(['finalizing']);
    clock.tick(1);
    expect(printed, 'with no later output, the hold ends the wait').to.deep.equal(['finalizing', 'completed']);
  });

  it('a later change released by output releases the earlier ones first', () => {
    const printed: string[] = [];
    const order = new StatusAfterOutput(400, (e) => printed.push(e.status));
    order.add(change('running', 10_000));
    order.add(change('finalizing', 10_050));
    order.outputSeen(new Date(10_060).toISOString());
    expect(printed).to.deep.equal(['running', 'finalizing']);
    clock.tick(1_000);
    expect(printed, 'each printed once').to.deep.equal(['running', 'finalizing']);
  });

  it('clear() drops what waits without printing it', () => {
    const printed: string[] = [];
    const order = new StatusAfterOutput(400, (e) => printed.push(e.status));
    order.add(change('running', 10_000));
    order.clear();
    clock.tick(1_000);
    expect(printed).to.deep.equal([]);
  });
});
