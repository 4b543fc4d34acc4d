/**
 * Invariant: a node cut off from the broker gives up its shards and cannot overwrite the state of the node that
 * took them. Two transports share one topology; A holds every shard, B stands by. When the broker closes A's
 * connection (management API, as an operator or a network partition would), A reports every shard it held as lost
 * (the node passivates those actors), B becomes their holder and answers asks for them, and a write A's stale
 * actor still attempts is refused by the snapshot version (STORAGE_STALE_VERSION).
 */
import { expect } from 'chai';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { KnexSnapshotStore } from '../../../storage/knex-snapshot-store.js';
import { shardOf } from '../../../transport/shards.js';
import type { AmqpTransport } from '../../../transport/amqp/transport.js';
import { engines, skipEngine } from '../../support/engines.js';
import { withPgliteDb, type TestDb } from '../../support/db.js';
import { cutOff, eventually, requireManagementApi, startAmqpTransport, testPrefix, type StartedTransport } from '../../support/transport.js';

const SHARDS = 2;
const ADDRESS = 'counter/c1';

/** A minimal actor per node: it keeps the version it last wrote, as a live actor keeps its snapshot in memory. */
class Counters {
  readonly live = new Map<string, { count: number; version: number }>();
  constructor(private readonly store: KnexSnapshotStore) {}

  readonly handle = async (address: string): Promise<number> => {
    let actor = this.live.get(address);
    if (!actor) {
      const snapshot = await this.store.load<{ count: number }>(address);
      actor = { count: snapshot?.state.count ?? 0, version: snapshot?.version ?? 0 };
      this.live.set(address, actor);
    }
    const count = actor.count + 1;
    actor.version = await this.store.save(address, actor.version, { count });
    actor.count = count;
    return count;
  };
}

(skipEngine.amqp ? describe.skip : describe)('AMQP transport: a node cut off from the broker', function () {
  this.timeout(60_000);
  let db: TestDb;
  const started: StartedTransport<AmqpTransport>[] = [];

  before(async () => {
    db = await withPgliteDb();
  });
  after(async () => {
    await Promise.all(started.splice(0).map((s) => s.close()));
    await db?.drop();
  });

  it('stops its actors of the lost shards, the standby takes them, and its stale write is refused', async function () {
    await requireManagementApi();
    const prefix = testPrefix();
    const onA = new Counters(new KnexSnapshotStore(db.knex));
    const onB = new Counters(new KnexSnapshotStore(db.knex));
    const lostByA: number[] = [];
    const a = await startAmqpTransport(onA.handle, {
      prefix, nodeId: 'cut-a', shardCount: SHARDS,
      onShardsLost: (shards) => {
        lostByA.push(...shards);
        // What ops/node.ts does: passivate the actors of those shards.
        for (const address of [...onA.live.keys()]) if (shards.includes(shardOf(address, SHARDS))) onA.live.delete(address);
      },
    });
    started.push(a);
    // A consumed first, so RabbitMQ made it the active consumer of every shard; B waits as the standby.
    expect(await a.transport.ask(ADDRESS, {}, { timeoutMs: 5_000 })).to.equal(1);
    const b = await startAmqpTransport(onB.handle, { prefix, nodeId: 'cut-b', shardCount: SHARDS });
    started.push(b);
    expect(await b.transport.ask(ADDRESS, {}, { timeoutMs: 5_000 })).to.equal(2);
    expect(a.transport.shardStatus().active).to.include(shardOf(ADDRESS, SHARDS));
    const staleActor = { ...onA.live.get(ADDRESS)! };

    await cutOff(a.transport.connectionName);
    await eventually(() => lostByA.includes(shardOf(ADDRESS, SHARDS)), 'A to report the shard lost');
    expect(onA.live.has(ADDRESS), 'A passivated the actor of the lost shard').to.equal(false);

    // B now holds the shard: the ask runs there, on state rehydrated from the snapshot.
    expect(await b.transport.ask(ADDRESS, {}, { timeoutMs: 10_000 })).to.equal(3);
    expect(onB.live.get(ADDRESS)?.version).to.equal(3);
    for (const shard of [0, 1]) b.transport.probeShard(shard);
    await eventually(() => b.transport.shardStatus().active.length === SHARDS, 'B to hold every shard');

    // A write A's actor was still about to make carries the version it knew, and loses.
    const err = await new KnexSnapshotStore(db.knex).save(ADDRESS, staleActor.version, { count: staleActor.count + 1 }).catch((caught: unknown) => caught);
    expect(err).to.be.instanceOf(TroupeError);
    expect((err as TroupeError).code).to.equal('STORAGE_STALE_VERSION');
    expect((await new KnexSnapshotStore(db.knex).load<{ count: number }>(ADDRESS))?.state.count).to.equal(3);

    // A reconnects as a standby: asks from it reach B, the holder.
    await eventually(() => a.transport.ready(), 'A to reconnect');
    expect(await a.transport.ask(ADDRESS, {}, { timeoutMs: 10_000 })).to.equal(4);
    expect(a.transport.shardStatus().active).to.deep.equal([]);
  });
});
