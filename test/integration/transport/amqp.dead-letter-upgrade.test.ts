/**
 * Invariant: dead-lettering is at-least-once and its queue bounded, on a new deployment and on one whose queues an
 * older Troupe declared (decision 0048). Past the bound the dead-letter queue refuses, and the refused dead letters
 * wait in their shard queue (RabbitMQ's `messages_dlx`) instead of being dropped. A node started on queues declared
 * with the old arguments (no dead-letter strategy, no overflow, a delivery limit of 5, an unbounded dead-letter
 * queue) starts all the same, gives them the dead-letter policies through the management API, and from then on a
 * poison message runs at most 5 times and the same bound holds.
 */
import { expect } from 'chai';
import amqp from 'amqplib';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { topologyNames } from '../../../transport/amqp/topology.js';
import { vhostOf } from '../../../transport/amqp/management-api.js';
import { atLeastOnce, queueSettings } from '../../../transport/amqp/dead-letter-policy.js';
import { managementCall } from '../../../transport/amqp/management-api.js';
import { amqpManagementUrl, engines, skipEngine } from '../../support/engines.js';
import { eventually, requireManagementApi, startAmqpTransport, testPrefix, type StartedTransport } from '../../support/transport.js';

const SHARDS = 4;
const BOUND = 2;
const api = { url: amqpManagementUrl, vhost: vhostOf(engines.amqp) };

/** What Troupe declared before decision 0048, argument for argument. */
async function declareOlderTopology(prefix: string): Promise<void> {
  const names = topologyNames(prefix, 'unused');
  const connection = await amqp.connect(engines.amqp);
  try {
    const channel = await connection.createChannel();
    await channel.assertExchange(names.shardExchange, 'direct', { durable: true });
    await channel.assertExchange(names.deadLetterExchange, 'fanout', { durable: true });
    for (let shard = 0; shard < SHARDS; shard += 1) {
      await channel.assertQueue(names.shardQueue(shard), {
        durable: true,
        arguments: { 'x-queue-type': 'quorum', 'x-single-active-consumer': true, 'x-delivery-limit': 5, 'x-dead-letter-exchange': names.deadLetterExchange },
      });
    }
    await channel.assertQueue(names.deadLetterQueue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await channel.bindQueue(names.deadLetterQueue, names.deadLetterExchange, '');
  } finally {
    await connection.close();
  }
}

/** Dead letters refused by the full dead-letter queue and kept in the shard queues, as the broker counts them. */
async function waitingInShardQueues(transport: AmqpTransport): Promise<number> {
  let total = 0;
  for (let shard = 0; shard < SHARDS; shard += 1) {
    const row = (await managementCall(api, 'GET', `/api/queues/{vhost}/${encodeURIComponent(transport.names.shardQueue(shard))}`)) as { messages_dlx?: number };
    total += row.messages_dlx ?? 0;
  }
  return total;
}

(skipEngine.amqp ? describe.skip : describe)('AMQP dead letters: at-least-once, bounded, and the upgrade of older queues', function () {
  this.timeout(60_000);
  let started: StartedTransport<AmqpTransport> | undefined;
  let runs: Map<string, number>;

  beforeEach(async function () {
    await requireManagementApi();
    runs = new Map();
  });

  afterEach(async () => {
    await started?.close();
    started = undefined;
  });

  async function startOn(prefix: string): Promise<AmqpTransport> {
    started = await startAmqpTransport(async (address) => {
      runs.set(address, (runs.get(address) ?? 0) + 1);
      throw new Error('handler bug');
    }, { prefix, shardCount: SHARDS, deadLetterBound: BOUND });
    return started.transport;
  }

  /** Four poison tells, one after the other, into a dead-letter queue that keeps two. */
  async function overfill(transport: AmqpTransport): Promise<void> {
    const deadLetterQueueDepth = async () => (await transport.deadLetters.list(0)).total;
    for (let n = 1; n <= 4; n += 1) {
      await transport.tell(`poison/${n}`, { n });
      await eventually(() => runs.get(`poison/${n}`) === 5, `poison/${n} ran 5 times`, 20_000);
    }
    // Each dead letter is either in the dead-letter queue or waiting in its shard queue: none is dropped.
    await eventually(async () => (await deadLetterQueueDepth()) + (await waitingInShardQueues(transport)) === 4, 'all 4 dead letters accounted for', 20_000);
    expect([...runs.values()], 'runs per poison message').to.deep.equal([5, 5, 5, 5]);
    // RabbitMQ may overshoot its bound by the one in flight when it fills up.
    expect(await deadLetterQueueDepth()).to.be.within(BOUND, BOUND + 1);
    expect(await waitingInShardQueues(transport)).to.be.at.least(1);
  }

  it('on a new deployment: at most 5 runs, then the dead-letter queue up to its bound and the rest kept in the shard queue', async () => {
    const transport = await startOn(testPrefix());
    expect((await transport.deadLetters.list(10)).strategy).to.equal('at-least-once');
    await overfill(transport);
  });

  it('on queues an older Troupe declared: the node starts, applies the policies, and the same holds', async () => {
    const prefix = testPrefix();
    await declareOlderTopology(prefix);
    const transport = await startOn(prefix);
    expect(transport.ready()).to.equal(true);
    await transport.deadLetters.settled();
    expect((await transport.deadLetters.list(10)).strategy).to.equal('at-least-once');
    const shard0 = await queueSettings(api, transport.names.shardQueue(0));
    expect(atLeastOnce(shard0), JSON.stringify(shard0)).to.equal(true);
    // The queue keeps its old argument of 5; the policy's lower limit is the one that applies.
    expect(shard0['delivery-limit']).to.equal(4);
    expect(await queueSettings(api, transport.names.deadLetterQueue)).to.include({ 'max-length': BOUND, overflow: 'reject-publish' });
    await overfill(transport);
  });
});
