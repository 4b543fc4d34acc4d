// Invariant: `troupe session watch` prints a status change after the output kept before it, although the change
// arrives first (output frames are relayed up to 100 ms late on another stream), and never holds a change longer
// than its bound.
import { expect } from 'chai';
import sinon from 'sinon';
import { behindTail, StatusAfterOutput, unseenSuffix } from '../../../ops/cli/session-watch.js';

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

  it('flush() prints every change still waiting, in order, once', () => {
    const printed: string[] = [];
    const order = new StatusAfterOutput(400, (e) => printed.push(e.status));
    order.add(change('running', 10_000));
    order.add(change('finalizing', 10_010));
    order.add(change('completed', 10_020));
    order.flush();
    expect(printed).to.deep.equal(['running', 'finalizing', 'completed']);
    clock.tick(1_000);
    expect(printed).to.deep.equal(['running', 'finalizing', 'completed']);
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

describe('session watch: matching the live output against the kept tail', () => {
  const tail = 'step 1\nstep 2\nstep 3\nstep 4\n';

  it('a stream still relaying lines from inside the tail is behind; one that reached or passed its end is not', () => {
    expect(behindTail(tail, 'step 2\n')).to.equal(true);
    expect(behindTail(tail, 'step 2\nstep 3\n')).to.equal(true);
    expect(behindTail(tail, 'step 3\nstep 4\n'), 'reached the end').to.equal(false);
    expect(behindTail(tail, 'step 4\nstep 5\n'), 'passed the end').to.equal(false);
    expect(behindTail(tail, ''), 'nothing relayed yet').to.equal(false);
    expect(behindTail(tail, 'step 5\n'), 'only new output').to.equal(false);
  });

  it('once past the tail, only what the tail lacks is printed', () => {
    expect(unseenSuffix(tail, 'step 3\nstep 4\nstep 5\n')).to.equal('step 5\n');
    expect(unseenSuffix(tail, 'step 5\n')).to.equal('step 5\n');
    // What matching a stream that was still behind printed twice (the case the watch now waits out):
    expect(unseenSuffix(tail, 'step 2\n')).to.equal('step 2\n');
  });
});
