// Invariant: the broker liveness probe calls a broker that answers its question alive however often it asks, and
// one that stops answering hung exactly once, within interval + timeout of the silence starting.
import { expect } from 'chai';
import sinon from 'sinon';
import type { Channel } from 'amqplib';
import { BrokerLivenessProbe } from '../../../transport/amqp/broker-liveness.js';

describe('broker liveness probe', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => { clock = sinon.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'Date'] }); });
  afterEach(() => clock.restore());

  const channelAnswering = (answers: () => boolean) =>
    ({ checkExchange: () => (answers() ? Promise.resolve({}) : new Promise(() => undefined)) }) as unknown as Channel;

  it('stays quiet while the broker answers', async () => {
    const hung: number[] = [];
    const probe = new BrokerLivenessProbe(channelAnswering(() => true), (ms) => hung.push(ms), { intervalMs: 1_000, timeoutMs: 4_000 });
    probe.start();
    await clock.tickAsync(60_000);
    probe.stop();
    expect(hung).to.deep.equal([]);
  });

  it('calls a silent broker hung once, within interval + timeout', async () => {
    let silentFrom = Infinity;
    const hung: number[] = [];
    const probe = new BrokerLivenessProbe(channelAnswering(() => Date.now() < silentFrom), (ms) => hung.push(Date.now()), { intervalMs: 1_000, timeoutMs: 4_000 });
    probe.start();
    await clock.tickAsync(10_000);
    silentFrom = Date.now();
    for (let i = 0; i < 200 && hung.length === 0; i++) {
      await clock.tickAsync(100);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await clock.tickAsync(30_000);
    expect(hung).to.have.length(1);
    expect(hung[0]! - silentFrom).to.be.within(4_000, 5_200);
  });
});
