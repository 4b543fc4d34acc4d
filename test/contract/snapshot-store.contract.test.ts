/**
 * Invariant: every SnapshotStore implementation fences writes by version. Each successful save returns the next
 * version; a save or remove with any other expected version (including racing first saves and racing updates)
 * fails with STORAGE_STALE_VERSION and changes nothing; of two concurrent saves from the same version exactly one
 * wins; the projection commits or rolls back together with the snapshot; a database that cannot be reached
 * surfaces as STORAGE_UNAVAILABLE, never as a raw driver error. Runs on PGlite (in memory) and on real Postgres.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import { createDb } from '../../storage/db.js';
import { KnexSnapshotStore, MAX_ADDRESS_BYTES } from '../../storage/knex-snapshot-store.js';
import type { SnapshotStore } from '../../storage/snapshot-store.js';
import { dbEngines, type TestDb } from '../support/db.js';

async function rejection(promise: Promise<unknown>): Promise<TroupeError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(TroupeError);
    return err as TroupeError;
  }
  expect.fail('expected the promise to reject');
}

let unique = 0;
const addressOf = (kind = 'session') => `${kind}/${process.pid}-${Date.now()}-${++unique}`;

export function snapshotStoreContract(name: string, open: () => Promise<{ store: SnapshotStore; db: TestDb }>): void {
  describe(`SnapshotStore contract: ${name}`, function () {
    let db: TestDb;
    let store: SnapshotStore;

    before(async function () {
      this.timeout(60_000); // the first PGlite of a process runs initdb, slow on a busy machine
      ({ store, db } = await open());
      await db.knex.schema.createTable('contract_projection', (t) => {
        t.text('address').primary();
        t.text('status').notNullable();
      });
    });
    after(async function () {
      await db?.drop();
    });

    it('loads nothing for an address never saved', async function () {
      expect(await store.load(addressOf())).to.equal(undefined);
    });

    it('first save from version 0 returns 1 and the state loads back', async function () {
      const address = addressOf();
      const state = { status: 'pending', nested: { list: [1, 'two', null], flag: true } };
      expect(await store.save(address, 0, state)).to.equal(1);
      const loaded = await store.load<typeof state>(address);
      expect(loaded?.address).to.equal(address);
      expect(loaded?.version).to.equal(1);
      expect(loaded?.state).to.deep.equal(state);
      expect(loaded?.updatedAt).to.be.instanceOf(Date);
    });

    it('bumps the version by one on every write', async function () {
      const address = addressOf();
      let version = 0;
      for (let i = 0; i < 5; i++) {
        const next = await store.save(address, version, { step: i });
        expect(next).to.equal(version + 1);
        version = next;
        expect((await store.load(address))?.version).to.equal(version);
      }
      expect((await store.load(address))?.state).to.deep.equal({ step: 4 });
    });

    it('stores arrays and scalars as JSON, not as database arrays', async function () {
      const address = addressOf();
      await store.save(address, 0, ['a', 'b']);
      expect((await store.load(address))?.state).to.deep.equal(['a', 'b']);
      await store.save(address, 1, 42);
      expect((await store.load(address))?.state).to.equal(42);
    });

    it('rejects a second first-save (insert race) as stale and keeps the first state', async function () {
      const address = addressOf();
      await store.save(address, 0, { owner: 'a' });
      const err = await rejection(store.save(address, 0, { owner: 'b' }));
      expect(err.code).to.equal('STORAGE_STALE_VERSION');
      expect((await store.load(address))?.state).to.deep.equal({ owner: 'a' });
    });

    it('rejects an update from an old version (update race) and keeps the newer state', async function () {
      const address = addressOf();
      await store.save(address, 0, { n: 1 });
      await store.save(address, 1, { n: 2 });
      const err = await rejection(store.save(address, 1, { n: 'late' }));
      expect(err.code).to.equal('STORAGE_STALE_VERSION');
      const future = await rejection(store.save(address, 7, { n: 'ahead' }));
      expect(future.code).to.equal('STORAGE_STALE_VERSION');
      expect(await store.load(address)).to.include({ version: 2 });
      expect((await store.load(address))?.state).to.deep.equal({ n: 2 });
    });

    it('an update of an address never saved is stale', async function () {
      const err = await rejection(store.save(addressOf(), 3, { n: 1 }));
      expect(err.code).to.equal('STORAGE_STALE_VERSION');
    });

    for (const from of [0, 1]) {
      it(`of concurrent saves from version ${from}, exactly one wins`, async function () {
        const address = addressOf();
        if (from === 1) await store.save(address, 0, { writer: 'seed' });
        const writers = Array.from({ length: 8 }, (_, i) => store.save(address, from, { writer: i }));
        const results = await Promise.allSettled(writers);
        const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
        expect(won).to.have.length(1);
        for (const r of results) {
          if (r.status === 'rejected') expect((r.reason as TroupeError).code).to.equal('STORAGE_STALE_VERSION');
        }
        const loaded = await store.load(address);
        expect(loaded?.version).to.equal(from + 1);
        expect(loaded?.state).to.deep.equal({ writer: won[0] });
      });
    }

    it('keys by the exact address, non-ASCII and long ones included', async function () {
      const base = `workflow/ünïcødé-名前-🙂-${++unique}`;
      const long = `${base}/${'é'.repeat(Math.floor((MAX_ADDRESS_BYTES - Buffer.byteLength(base) - 1) / 2))}`;
      expect(Buffer.byteLength(long)).to.be.at.most(MAX_ADDRESS_BYTES);
      await store.save(base, 0, { which: 'base' });
      await store.save(long, 0, { which: 'long' });
      expect((await store.load(base))?.state).to.deep.equal({ which: 'base' });
      expect((await store.load(long))?.state).to.deep.equal({ which: 'long' });
      const kinds = await db.knex('actor_snapshots').whereIn('address', [base, long]).pluck('kind');
      expect(kinds).to.deep.equal(['workflow', 'workflow']);
    });

    it('refuses addresses it cannot key (empty, over the byte cap, NUL) as a validation error', async function () {
      for (const address of ['', `session/${'x'.repeat(MAX_ADDRESS_BYTES)}`, 'session/a\u0000b']) {
        expect((await rejection(store.save(address, 0, {}))).code).to.equal('VALIDATION_FAILED');
        expect((await rejection(store.load(address))).code).to.equal('VALIDATION_FAILED');
      }
    });

    it('refuses state text the database cannot hold as a validation error, writing nothing', async function () {
      const address = addressOf();
      expect((await rejection(store.save(address, 0, { prompt: 'a\u0000b' }))).code).to.equal('VALIDATION_FAILED');
      expect(await store.load(address)).to.equal(undefined);
    });

    it('commits the projection with the snapshot', async function () {
      const address = addressOf();
      await store.save(address, 0, { status: 'running' }, async (trx) => {
        await trx('contract_projection').insert({ address, status: 'running' });
      });
      expect(await db.knex('contract_projection').where({ address }).first()).to.deep.equal({ address, status: 'running' });
    });

    it('rolls the snapshot back when the projection throws', async function () {
      const address = addressOf();
      await store.save(address, 0, { status: 'v1' });
      const boom = new Error('projection failed');
      let caught: unknown;
      try {
        await store.save(address, 1, { status: 'v2' }, async (trx) => {
          await trx('contract_projection').insert({ address, status: 'v2' });
          throw boom;
        });
      } catch (err) {
        caught = err;
      }
      expect(caught).to.equal(boom);
      const loaded = await store.load(address);
      expect(loaded?.version).to.equal(1);
      expect(loaded?.state).to.deep.equal({ status: 'v1' });
      expect(await db.knex('contract_projection').where({ address }).first()).to.equal(undefined);
      // The failed attempt consumed nothing: the next save from version 1 still succeeds.
      expect(await store.save(address, 1, { status: 'v2' })).to.equal(2);
    });

    it('does not run the projection when the version is stale', async function () {
      const address = addressOf();
      await store.save(address, 0, {});
      let ran = false;
      const err = await rejection(
        store.save(address, 0, {}, async () => {
          ran = true;
        }),
      );
      expect(err.code).to.equal('STORAGE_STALE_VERSION');
      expect(ran).to.equal(false);
    });

    it('removes only at the current version; a stale remove changes nothing', async function () {
      const address = addressOf();
      await store.save(address, 0, { a: 1 });
      await store.save(address, 1, { a: 2 });
      expect((await rejection(store.remove(address, 1))).code).to.equal('STORAGE_STALE_VERSION');
      expect((await store.load(address))?.version).to.equal(2);
      await store.remove(address, 2);
      expect(await store.load(address)).to.equal(undefined);
      // Removing an actor that never saved is a no-op; after a remove the address starts over from version 0.
      await store.remove(addressOf(), 0);
      expect(await store.save(address, 0, { a: 'again' })).to.equal(1);
    });
  });
}

for (const engine of dbEngines) {
  if (engine.skip) continue;
  snapshotStoreContract(engine.name, async () => {
    const db = await engine.open('snapshots');
    return { db, store: new KnexSnapshotStore(db.knex) };
  });
}

describe('KnexSnapshotStore when the database is unreachable', function () {
  it('reports STORAGE_UNAVAILABLE within seconds for a refused Postgres connection', async function () {
    const knex = await createDb({ databaseUrl: 'postgres://postgres@127.0.0.1:1/postgres', log: quietLog });
    try {
      const store = new KnexSnapshotStore(knex);
      const started = Date.now();
      expect((await rejection(store.load('session/x'))).code).to.equal('STORAGE_UNAVAILABLE');
      expect((await rejection(store.save('session/x', 0, {}))).code).to.equal('STORAGE_UNAVAILABLE');
      expect(Date.now() - started).to.be.below(5_000);
    } finally {
      await knex.destroy();
    }
  });

  const postgres = dbEngines.find((e) => e.name === 'postgres');
  (postgres && !postgres.skip ? it : it.skip)(
    'reports STORAGE_UNAVAILABLE when Postgres terminates the connection mid-transaction, and writes nothing',
    async function () {
      const db = await postgres!.open('terminate');
      const admin = await db.reopen();
      try {
        const store = new KnexSnapshotStore(db.knex);
        const address = addressOf();
        let pid = 0;
        let resolveStarted!: () => void;
        const started = new Promise<void>((resolve) => (resolveStarted = resolve));
        const saving = store.save(address, 0, { doomed: true }, async (trx: Knex.Transaction) => {
          pid = (await trx.raw('select pg_backend_pid() as pid')).rows[0].pid;
          resolveStarted();
          await trx.raw('select pg_sleep(10)');
        });
        await started;
        await admin.raw('select pg_terminate_backend(?)', [pid]);
        expect((await rejection(saving)).code).to.equal('STORAGE_UNAVAILABLE');
        // The pool recovers on its own: the next call gets a fresh connection.
        expect(await store.load(address)).to.equal(undefined);
      } finally {
        await db.drop();
      }
    },
  );
});

const quietLog = { warn: () => undefined, error: () => undefined, debug: () => undefined };
