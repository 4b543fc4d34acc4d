/**
 * Invariant: createDb hands out a working knex for either engine and says which one it is; pingDb answers true
 * only while the database answers and never throws; a searchPath confines tables to their schema on both engines;
 * bigint columns read as numbers on both engines, so callers never see '5' on one and 5 on the other.
 */
import { expect } from 'chai';
import { createDb, dbKind, EMBEDDED_SHARED_BUFFERS, pingDb } from '../../../storage/db.js';
import { newMigratedPglite } from '../../support/db.js';
import { engines, skipEngine } from '../../support/engines.js';

const quietLog = { warn: () => undefined, error: () => undefined, debug: () => undefined };

describe('createDb', function () {
  // PGlite starts slowly on a loaded machine; these tests clone a migrated template instead of running initdb each.
  this.timeout(60_000);

  it('opens PGlite in memory, reports pglite, pings, and stops pinging once destroyed', async function () {
    const knex = await createDb({ pglite: await newMigratedPglite() });
    expect(dbKind(knex)).to.equal('pglite');
    expect(await pingDb(knex)).to.equal(true);
    await knex.transaction(async (trx) => expect(dbKind(trx)).to.equal('pglite'));
    await knex.destroy();
    expect(await pingDb(knex)).to.equal(false);
  });

  it('starts its own PGlite with the embedded shared buffers, not a server-sized 128 MB (G10)', async function () {
    this.timeout(180_000); // initdb, not a cloned template
    const knex = await createDb({ inMemory: true });
    try {
      const shown = await knex.raw('show shared_buffers');
      expect(shown.rows[0].shared_buffers).to.equal(EMBEDDED_SHARED_BUFFERS);
    } finally {
      await knex.destroy();
    }
  });

  it('confines tables to the searchPath schema on PGlite', async function () {
    const knex = await createDb({ pglite: await newMigratedPglite(), searchPath: 'tenant_a' });
    try {
      await knex.raw('create table things (n int)');
      const where = await knex.raw("select table_schema from information_schema.tables where table_name = 'things'");
      expect(where.rows).to.deep.equal([{ table_schema: 'tenant_a' }]);
    } finally {
      await knex.destroy();
    }
  });

  it('refuses a schema name that is not a plain identifier', async function () {
    for (const searchPath of ['a"; drop schema public cascade; --', '', '1abc', 'x'.repeat(64)]) {
      let failed = false;
      await createDb({ inMemory: true, searchPath }).then((k) => k.destroy(), () => (failed = true));
      expect(failed, searchPath).to.equal(true);
    }
  });

  (skipEngine.postgres ? describe.skip : describe)('on Postgres', function () {
    it('reports postgres, pings, confines to its schema and reads bigint as a number', async function () {
      const schema = `t_dbengine_${process.pid}_${Date.now()}`;
      const knex = await createDb({ databaseUrl: engines.postgres, searchPath: schema });
      try {
        expect(dbKind(knex)).to.equal('postgres');
        expect(await pingDb(knex)).to.equal(true);
        await knex.raw('create table things (n bigint)');
        await knex('things').insert([{ n: 1 }, { n: 2 }]);
        const where = await knex.raw("select table_schema from information_schema.tables where table_name = 'things'");
        expect(where.rows).to.deep.equal([{ table_schema: schema }]);
        const counted = await knex('things').count({ c: '*' }).first();
        expect(counted).to.deep.equal({ c: 2 });
        const huge = await knex.raw('select 9007199254740993::bigint as n');
        expect(huge.rows[0].n).to.equal('9007199254740993'); // beyond 2^53 stays exact, as text
      } finally {
        await knex.raw(`drop schema if exists "${schema}" cascade`);
        await knex.destroy();
      }
    });

    it('pings false, quickly, when nothing listens', async function () {
      const knex = await createDb({ databaseUrl: 'postgres://postgres@127.0.0.1:1/postgres', log: quietLog });
      try {
        const started = Date.now();
        expect(await pingDb(knex)).to.equal(false);
        expect(Date.now() - started).to.be.below(2_500);
      } finally {
        await knex.destroy();
      }
    });
  });

  it('reads bigint as a number on PGlite too', async function () {
    const knex = await createDb({ pglite: await newMigratedPglite() });
    try {
      await knex.raw('create table things (n bigint)');
      await knex('things').insert([{ n: 1 }, { n: 2 }]);
      expect(await knex('things').count({ c: '*' }).first()).to.deep.equal({ c: 2 });
    } finally {
      await knex.destroy();
    }
  });
});
