/**
 * Invariant: an event dropped from a node's full event queue is not lost silently: the node counts it
 * (troupe_transport_events_lost_total) and tells its listeners the topic, and the stream fan-out turns that into a
 * `reset` for the clients of that channel (and forgets the channel's history, which now has a hole).
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { ChannelFanout } from '../../../actors/services/fleet/channel-fanout.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { skipEngine } from '../../support/engines.js';
import { eventually, startAmqpTransport, type StartedTransport } from '../../support/transport.js';

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: events lost to a full event queue', function () {
  this.timeout(30_000);
  let started: StartedTransport<AmqpTransport> | undefined;
  after(async () => { await started?.close(); });

  it('counts each dropped event and reports its topic', async () => {
    const metrics = new Registry();
    started = await startAmqpTransport(async () => undefined, { eventBacklog: 3, metrics, prefetch: 1 });
    const { transport } = started;
    const lost: string[] = [];
    transport.onEventsLost((topic) => lost.push(topic));
    const seen: number[] = [];
    // A subscriber slower than the publisher: the node's queue fills past its backlog of 3.
    await transport.subscribe('org.*.session.changed', (_topic, event) => {
      const until = Date.now() + 5;
      while (Date.now() < until);
      seen.push((event as { n: number }).n);
    });
    await Promise.all(Array.from({ length: 400 }, (_, n) => transport.publish(`org.o${n % 2}.session.changed`, { n })));
    await eventually(() => seen.length + lost.length === 400, 'every event handled or reported lost', 20_000);
    expect(lost.length, 'some events were dropped').to.be.above(0);
    expect(new Set(lost)).to.deep.equal(new Set(['org.o0.session.changed', 'org.o1.session.changed']));
    const counted = (await metrics.getSingleMetric('troupe_transport_events_lost_total')!.get()).values[0]!.value;
    expect(counted).to.equal(lost.length);
  });

  it('the fan-out tells the channel subscribers to reload and forgets the hole-y history', () => {
    const fanout = new ChannelFanout<number>({ ringSize: 10, maxChannels: 10 });
    fanout.deliver('org-a', { id: 'e1', data: 1 });
    let resets = 0;
    const sub = fanout.subscribe('org-a', () => undefined, undefined, () => { resets += 1; });
    const other = fanout.subscribe('org-b', () => undefined, undefined, () => { throw new Error('not this one'); });
    fanout.lost('org-a');
    expect(resets).to.equal(1);
    expect(fanout.subscribe('org-a', () => undefined, 'e1').found, 'a resume across the hole is refused').to.equal(false);
    sub.unsubscribe();
    other.unsubscribe();
    fanout.lost('org-a');
    expect(resets).to.equal(1);
  });
});
