// Invariant: `troupe dead-letters list|replay|purge` drive the platform admin's dead-letter routes of a running node,
// on the embedded transport and on RabbitMQ alike: list prints what no node could handle (address, reason, payload),
// replay sends a readable one to its address again and it leaves the list, an unreadable one is refused for replay
// (exit 2) and purged by id, unknown ids come back as not found (exit 2), a selection is required, and bad input to
// the routes is a 400 {error, code} that changes nothing.
import { expect } from 'chai';
import amqp from 'amqplib';
import { runCliCaptured as cli } from '../../support/cli.js';
import { engines } from '../../support/engines.js';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import type { LocalTransport } from '../../../transport/local.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { createEnvelope, encodeEnvelope } from '../../../transport/envelope.js';
import { shardOf } from '../../../transport/shards.js';
import { eventually } from '../../support/transport.js';

for (const { set, skip } of engineSets) describe(`troupe CLI: dead letters (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  before(async () => { t = await startTestNode({ engines: set }); });
  after(async () => { await t?.close(); });

  /**
   * A readable tell that could not be handled, and (on RabbitMQ) a body nobody can read. The embedded transport
   * takes the tell as its delivery limit would leave it; the broker gets it on the wrong shard queue, which a node
   * refuses and dead-letters (shard-deliveries.ts), and the unreadable body on a shard queue of its own.
   */
  async function deadLetter(address: string): Promise<void> {
    const envelope = createEnvelope({ type: 'tell', to: address, from: 'test', deadline: Date.now() + 60_000, payload: { to: address } });
    const transport = t.node.deps.transport;
    if (transport.kind === 'local') return (transport as LocalTransport).deadLetters.add(envelope, 'delivery_limit');
    const { names } = transport as AmqpTransport;
    const connection = await amqp.connect(engines.amqp);
    try {
      const channel = await connection.createConfirmChannel();
      const wrongShard = (shardOf(address, t.config.shardCount) + 1) % t.config.shardCount;
      channel.publish(names.shardExchange, String(wrongShard), encodeEnvelope(envelope), { persistent: true, messageId: envelope.id, type: 'tell' });
      channel.publish(names.shardExchange, '0', Buffer.from('{"not": "an envelope"'), { persistent: true, messageId: `unreadable-${address}` });
      await channel.waitForConfirms();
    } finally {
      await connection.close();
    }
  }

  it('lists, replays and purges dead letters', async () => {
    const admin = ['--url', t.url, '--admin-token', t.adminToken, 'dead-letters'];
    const list = async () => {
      const listed = await cli([...admin, 'list']);
      expect(listed.code, listed.err).to.equal(0);
      return JSON.parse(listed.out) as { items: Array<{ id: string; kind: string; address: string | null; payload: unknown }>; total: number; strategy: string };
    };
    await deadLetter('nosuchkind/cli-1');
    const expected = set === 'real' ? 2 : 1;
    await eventually(async () => (await list()).total === expected, `${expected} dead letters`);
    const page = await list();
    expect(page.strategy).to.equal(set === 'real' ? 'at-least-once' : 'in-process');
    const tell = page.items.find((l) => l.kind === 'tell')!;
    expect(tell).to.deep.include({ address: 'nosuchkind/cli-1', payload: { to: 'nosuchkind/cli-1' } });

    const replayed = await cli([...admin, 'replay', '--id', tell.id]);
    expect(replayed.code, replayed.err).to.equal(0);
    expect(JSON.parse(replayed.out)).to.deep.equal({ done: [tell.id], notFound: [], unreadable: [] });
    // Replayed, it is a new message (it ran again); the dead letter it was is gone.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await list()).items.map((l) => l.id)).to.not.include(tell.id);

    if (set === 'real') {
      const unreadable = (await list()).items.find((l) => l.kind === 'unreadable')!;
      expect(unreadable.id).to.equal('unreadable-nosuchkind/cli-1');
      const refused = await cli([...admin, 'replay', '--id', unreadable.id]);
      expect(refused.code).to.equal(2);
      expect(JSON.parse(refused.out).unreadable).to.deep.equal([unreadable.id]);
      const purged = await cli([...admin, 'purge', '--id', unreadable.id]);
      expect(purged.code, purged.err).to.equal(0);
      expect(JSON.parse(purged.out).done).to.deep.equal([unreadable.id]);
    }
    const all = await cli([...admin, 'purge', '--all']);
    expect(all.code, all.err).to.equal(0);
    const left = await list();
    expect(left.total, JSON.stringify(left)).to.equal(0);

    const unknown = await cli([...admin, 'purge', '--id', 'no-such-dead-letter']);
    expect(unknown.code).to.equal(2);
    expect(JSON.parse(unknown.out).notFound).to.deep.equal(['no-such-dead-letter']);
    const neither = await cli([...admin, 'purge']);
    expect(neither.code).to.equal(1);
    expect(neither.err).to.include('--id <id...>');
  });

  it('answers bad input with 400 {error, code} and keeps the dead letters', async () => {
    await deadLetter('nosuchkind/http-1');
    await eventually(async () => (await t.call('GET', '/api/admin/dead-letters', { token: t.adminToken })).json.total > 0, 'a dead letter');
    const before = (await t.call('GET', '/api/admin/dead-letters', { token: t.adminToken })).json.total as number;
    for (const body of [{}, { all: false }, { ids: [] }, { ids: ['a'], all: true }, { ids: ['has space'] }, { ids: 'x' }]) {
      const res = await t.call('POST', '/api/admin/dead-letters/purge', { token: t.adminToken, body });
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.json).to.include({ code: 'VALIDATION_FAILED' });
      expect(res.json.error).to.be.a('string');
    }
    expect((await t.call('GET', '/api/admin/dead-letters?limit=5000', { token: t.adminToken })).status).to.equal(400);
    expect((await t.call('GET', '/api/admin/dead-letters', { token: t.adminToken })).json.total).to.equal(before);
    expect((await t.call('GET', '/api/admin/dead-letters')).status).to.equal(401);
    await t.call('POST', '/api/admin/dead-letters/purge', { token: t.adminToken, body: { all: true } });
  });
});
