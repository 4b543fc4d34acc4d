import { expect } from 'chai';
import { NodeDrain } from '../../../actors/services/node-drain.js';

describe('node drain', () => {
  it('is serving only between the end of its start and the first moment of a drain', () => {
    const drain = new NodeDrain();
    expect(drain.serving).to.equal(false);
    expect(drain.draining).to.equal(false);
    drain.markStarted();
    expect(drain.serving).to.equal(true);
    drain.begin(1_000);
    drain.begin(2_000);
    expect(drain.draining).to.equal(true);
    expect(drain.serving).to.equal(false);
  });
});
