/**
 * Invariant: the migration list applies once. A second run applies nothing; both engines end up with the same
 * applied names and the same tables and columns; a PGlite database on disk keeps its data and its migration
 * record across a close and reopen (what a node restart on embedded defaults does).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createDb } from '../../../storage/db.js';
import { KnexSnapshotStore } from '../../../storage/knex-snapshot-store.js';
import { migrations } from '../../../storage/migrations/index.js';
import { appliedMigrations, migrate } from '../../../storage/migrations/runner.js';
import { dbEngines, type TestDb } from '../../support/db.js';

async function columnsOf(knex: Knex, table: string): Promise<string[]> {
  const result = await knex.raw(
    `select column_name || ':' || data_type as c from information_schema.columns
      where table_schema = current_schema() and table_name = ? order by column_name`,
    [table],
  );
  return (result.rows as Array<{ c: string }>).map((r) => r.c);
}

const names = migrations.map((m) => m.name);

describe('migrations', function () {
  const shapes = new Map<string, { applied: string[]; snapshots: string[]; audit: string[] }>();

  it('have unique names in the static list', function () {
    expect(new Set(names).size).to.equal(names.length);
    expect(names).to.include.members(['0001_actor_snapshots', '0002_audit_log']);
  });

  for (const engine of dbEngines) {
    (engine.skip ? describe.skip : describe)(engine.name, function () {
      let db: TestDb;
      before(async function () {
        this.timeout(60_000); // the first PGlite of a process runs initdb, slow on a busy machine
        db = await engine.open('migrations'); // already migrated once
      });
      after(async function () {
        await db?.drop();
      });

      it('a second run applies nothing and the record lists every migration once', async function () {
        expect(await migrate(db.knex)).to.deep.equal([]);
        expect(await appliedMigrations(db.knex)).to.deep.equal(names);
        shapes.set(engine.name, {
          applied: await appliedMigrations(db.knex),
          snapshots: await columnsOf(db.knex, 'actor_snapshots'),
          audit: await columnsOf(db.knex, 'audit_log'),
        });
      });
    });
  }

  // Mocha runs a suite's own tests before its child suites, so the comparison lives in a child suite after the engines.
  describe('across engines', function () {
    it('produce the same tables and columns on both engines', function () {
      const pglite = shapes.get('pglite');
      const postgres = shapes.get('postgres');
      if (!pglite || !postgres) this.skip();
      expect(postgres).to.deep.equal(pglite);
      expect(pglite!.snapshots).to.include.members(['address:text', 'kind:text', 'version:bigint', 'state:jsonb', 'updated_at:timestamp with time zone']);
    });
  });
});

describe('PGlite on a data directory', function () {
  let dataDir: string;
  before(async function () {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'troupe-pglite-'));
  });
  after(async function () {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps snapshots and the migration record across close and reopen', async function () {
    this.timeout(60_000);
    const first = await createDb({ dataDir });
    expect(await migrate(first)).to.deep.equal(names);
    expect(await new KnexSnapshotStore(first).save('session/persisted', 0, { status: 'running', note: 'überlebt' })).to.equal(1);
    await first.destroy();

    const second = await createDb({ dataDir });
    try {
      expect(await migrate(second)).to.deep.equal([]);
      const loaded = await new KnexSnapshotStore(second).load('session/persisted');
      expect(loaded?.version).to.equal(1);
      expect(loaded?.state).to.deep.equal({ status: 'running', note: 'überlebt' });
    } finally {
      await second.destroy();
    }
  });
});
