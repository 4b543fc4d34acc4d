// Invariant: on the real knex snapshot store (PGlite and Postgres), the runtime's guarantees hold end to end, with a
// projection through knex and one riding in the snapshot's own statement (decision 0055) alike: a reply means the
// snapshot and the behavior's projection committed together; a projection that fails rolls the snapshot back and leaves the actor's state
// unchanged; and when two nodes' systems both host one address, the version fence makes the stale one stop and
// rehydrate the other's state instead of overwriting it.
import { expect } from 'chai';
import { pino } from 'pino';
import { createActorSystem, type ActorSystem } from '../../../actors/runtime/system.js';
import { systemClock } from '../../../ops/kernel/clock.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { KnexSnapshotStore } from '../../../storage/knex-snapshot-store.js';
import { APPLIED } from '../../../storage/transition-statement.js';
import { MemorySnapshotStore } from '../../support/memory-snapshot-store.js';
import { dbEngines, type TestDb } from '../../support/db.js';
import { counterBehavior, rejectionOf, type CounterMsg, type CounterReply } from './counter-machine.js';

for (const engine of dbEngines) for (const form of ['knex', 'statement'] as const) describe(`actor runtime on the knex snapshot store (${engine.name}, ${form} projection)`, () => {
  let db: TestDb;
  const systems: ActorSystem[] = [];

  before(async function () {
    if (engine.skip) this.skip();
    // The first PGlite of a run builds the migrated template, which takes long on a busy machine.
    this.timeout(120_000);
    db = await engine.open('rt_snap');
    await db.knex.schema.createTable('test_counter_view', (t) => {
      t.text('id').primary();
      t.integer('count').notNullable();
    });
  });
  afterEach(async () => { await Promise.all(systems.splice(0).map((s) => s.stop())); });
  after(() => db?.drop());

  /** A node: its own system over the shared database, projecting counts into a read model. */
  function node() {
    const system = createActorSystem({
      snapshots: new KnexSnapshotStore(db.knex), clock: systemClock, log: pino({ level: 'silent' }),
      passivateAfterMs: 60_000, defaultAskTimeoutMs: 5_000,
    });
    const refuse13 = (count: number) => {
      if (count === 13) throw new TroupeError('CONFLICT', 'unlucky number refused by the read model');
    };
    system.register(form === 'knex'
      ? {
          ...counterBehavior,
          async project(trx, id, next) {
            refuse13(next.count);
            await trx('test_counter_view').insert({ id, count: next.count }).onConflict('id').merge();
          },
        }
      : {
          ...counterBehavior,
          projectStatement(st, id, next) {
            // 13 is refused by the database itself (a null count), inside the one statement that also writes the snapshot.
            st.part('view', `insert into test_counter_view (id, count) select ${st.list([id, next.count === 13 ? null : next.count])}
              where ${APPLIED} on conflict (id) do update set count = excluded.count`);
            return undefined;
          },
        });
    systems.push(system);
    return (id: string) => system.ref<CounterMsg, CounterReply>('counter', id);
  }

  const viewOf = async (id: string) => (await db.knex('test_counter_view').where({ id }).first())?.count as number | undefined;
  const snapshotOf = async (address: string) => db.knex('actor_snapshots').where({ address }).first();

  it('replies only with a committed snapshot and read model', async () => {
    const counter = node();
    expect(await counter('k1').ask({ type: 'counter.increment', by: 4 })).to.deep.equal({ status: 'on', count: 4 });
    expect(await viewOf('k1')).to.equal(4);
    const row = await snapshotOf('counter/k1');
    expect(Number(row.version)).to.equal(1);
    expect(row.state).to.deep.equal({ status: 'on', count: 4 });
  });

  it('a failing projection rolls the snapshot back and the actor keeps its state', async () => {
    const counter = node();
    await counter('k2').ask({ type: 'counter.increment', by: 12 });
    const err = await rejectionOf(counter('k2').ask({ type: 'counter.increment' }));
    expect(err).to.include({ code: form === 'statement' ? 'INTERNAL' : 'CONFLICT' });
    expect(Number((await snapshotOf('counter/k2')).version)).to.equal(1);
    expect(await viewOf('k2')).to.equal(12);
    expect(await counter('k2').ask({ type: 'counter.increment', by: 2 })).to.deep.equal({ status: 'on', count: 14 });
  });

  it('two owners of one address: the stale one stops and rehydrates the other\'s state', async () => {
    const onA = node();
    const onB = node();
    await onA('k3').ask({ type: 'counter.increment' });
    // B loads version 1 and writes version 2 behind A's back.
    await onB('k3').ask({ type: 'counter.increment', by: 10 });
    const err = await rejectionOf(onA('k3').ask({ type: 'counter.increment' }));
    expect(err).to.include({ code: 'STORAGE_STALE_VERSION' });
    expect(systems[0]!.isAlive('counter/k3')).to.equal(false);
    expect(await onA('k3').ask({ type: 'counter.increment' })).to.deep.equal({ status: 'on', count: 12 });
    expect(await viewOf('k3')).to.equal(12);
  });
});

describe('actor runtime: one projection per kind', () => {
  it('refuses to register a kind with both a knex and a statement projection', async () => {
    const system = createActorSystem({
      snapshots: new MemorySnapshotStore(), clock: systemClock, log: pino({ level: 'silent' }),
      passivateAfterMs: 60_000, defaultAskTimeoutMs: 5_000,
    });
    try {
      expect(() => system.register({ ...counterBehavior, project: async () => undefined, projectStatement: () => undefined }))
        .to.throw(/two projections/);
    } finally {
      await system.stop();
    }
  });
});
