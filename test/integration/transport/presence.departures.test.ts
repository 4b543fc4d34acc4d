/**
 * Invariant: presence reports a member as expired only when it was heard and then went silent for the expiry (not
 * when it said it was leaving), and reports a member's previous inbox when its heartbeat names a new one. The
 * transport re-sends asks on exactly these signals (ops/decisions/0019-owner-routed-asks.md).
 */
import { expect } from 'chai';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { Presence } from '../../../transport/cluster/presence.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { engines, skipEngine } from '../../support/engines.js';
import { eventually, testPrefix } from '../../support/transport.js';

(skipEngine.amqp ? describe.skip : describe)('presence: departures and replaced inboxes', function () {
  this.timeout(20_000);
  let presence: Presence;
  let connection: ChannelModel;
  let channel: Channel;
  let expired: string[];
  let replaced: Array<[string, string]>;

  beforeEach(async () => {
    const prefix = testPrefix();
    expired = [];
    replaced = [];
    presence = new Presence({
      url: engines.amqp, prefix, nodeId: 'watcher', log: silentLogger(), intervalMs: 100, expireAfterMs: 600,
      advertise: () => ({ url: undefined, consuming: [], owned: [] }),
    });
    presence.onExpired((nodeId) => expired.push(nodeId));
    presence.onInboxReplaced((nodeId, inbox) => replaced.push([nodeId, inbox]));
    await presence.start();
    connection = await amqp.connect(engines.amqp);
    channel = await connection.createChannel();
  });

  afterEach(async () => {
    await presence.close();
    await connection.close();
  });

  const beat = (nodeId: string, fields: { leaving?: boolean; inbox?: string } = {}) =>
    channel.publish(presence.exchange, '', Buffer.from(JSON.stringify({ v: 1, nodeId, leaving: false, url: undefined, consuming: [], owned: [], ...fields })));

  it('reports a member that went silent, once, and not one that said it was leaving', async () => {
    beat('silent');
    beat('polite');
    await eventually(() => presence.members().length === 3, 'both members heard');
    beat('polite', { leaving: true });
    await eventually(() => expired.length > 0, 'the silent member expired');
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(expired).to.deep.equal(['silent']);
    expect(presence.members().map((m) => m.nodeId)).to.deep.equal(['watcher']);
  });

  it("reports a member's previous inbox when its heartbeat names a new one", async () => {
    beat('mover', { inbox: 'first' });
    beat('mover', { inbox: 'first' });
    beat('mover', { inbox: 'second' });
    await eventually(() => replaced.length === 1, 'the replaced inbox reported');
    beat('mover', { inbox: 'second' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(replaced).to.deep.equal([['mover', 'first']]);
  });
});
