// Invariant: /metrics says how many dead letters are kept (the cluster's dead-letter queue on RabbitMQ, the node's
// list in-process), their bound, how many were dropped past it and whether dead-lettering is at-least-once, and
// follows the queue as dead letters arrive and are purged.
import { expect } from 'chai';
import amqp from 'amqplib';
import { engines } from '../../support/engines.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import type { LocalTransport } from '../../../transport/local.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { createEnvelope, encodeEnvelope } from '../../../transport/envelope.js';
import { shardOf } from '../../../transport/shards.js';
import { eventually } from '../../support/transport.js';

for (const { set, skip } of engineSets) describe(`dead letters in /metrics (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  before(async () => { t = await startTestNode({ engines: set }); });
  after(async () => { await t?.close(); });

  const gauge = async (name: string): Promise<number> => {
    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).to.equal(200);
    const line = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(await res.text());
    return line === null ? NaN : Number(line[1]);
  };

  /** Tells nobody can handle: on RabbitMQ sent to the wrong shard queue, which a node refuses and dead-letters. */
  async function deadLetters(count: number): Promise<void> {
    const envelopes = Array.from({ length: count }, (_, i) => createEnvelope({ type: 'tell', to: `nosuchkind/metrics-${i}`, from: 'test', deadline: Date.now() + 60_000, payload: {} }));
    const transport = t.node.deps.transport;
    if (transport.kind === 'local') {
      for (const e of envelopes) (transport as LocalTransport).deadLetters.add(e, 'delivery_limit');
      return;
    }
    const { names } = transport as AmqpTransport;
    const connection = await amqp.connect(engines.amqp);
    try {
      const channel = await connection.createConfirmChannel();
      for (const e of envelopes) {
        const wrongShard = (shardOf(e.to, t.config.shardCount) + 1) % t.config.shardCount;
        channel.publish(names.shardExchange, String(wrongShard), encodeEnvelope(e), { persistent: true, messageId: e.id, type: 'tell' });
      }
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
  }

  it('counts dead letters as they arrive and as they are purged', async () => {
    expect(await gauge('troupe_dead_letters')).to.equal(0);
    expect(await gauge('troupe_dead_letters_bound')).to.be.above(0);
    expect(await gauge('troupe_dead_letters_at_least_once')).to.equal(set === 'real' ? 1 : 0);
    await deadLetters(3);
    await eventually(async () => (await gauge('troupe_dead_letters')) === 3, '3 dead letters in /metrics');
    const purged = await t.call('POST', '/api/admin/dead-letters/purge', { token: t.adminToken, body: { all: true } });
    expect(purged.status, purged.text).to.equal(200);
    await eventually(async () => (await gauge('troupe_dead_letters')) === 0, 'none once purged');
    expect(await gauge('troupe_dead_letters_dropped')).to.equal(0);
  });

  if (set !== 'real') {
    it('counts what the in-process list dropped past its bound', async () => {
      const bound = await gauge('troupe_dead_letters_bound');
      await deadLetters(bound + 2);
      expect(await gauge('troupe_dead_letters')).to.equal(bound);
      expect(await gauge('troupe_dead_letters_dropped')).to.equal(2);
    });
  }
});
