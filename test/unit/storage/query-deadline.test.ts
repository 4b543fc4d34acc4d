// Invariant (issue 20): a Postgres query unanswered within the deadline fails as STORAGE_UNAVAILABLE, through knex's
// builder and the plain-SQL paths alike, and its connection is dropped rather than handed to the next caller;
// migrations run without the deadline. Runs against the real Postgres (pg_sleep stands in for a server that hangs).
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createDb } from '../../../storage/db.js';
import { inSqlTransaction, sqlQuery } from '../../../storage/sql-tx.js';
import { suspendQueryDeadline } from '../../../storage/query-deadline.js';
import { toStorageError } from '../../../storage/storage-errors.js';
import { engines, skipEngine } from '../../support/engines.js';

(skipEngine.postgres ? describe.skip : describe)('storage: the query deadline', function () {
  this.timeout(30_000);
  let db: Knex;

  before(async () => {
    db = await createDb({ databaseUrl: engines.postgres, poolMax: 2, queryTimeoutMs: 300, log: { warn: () => undefined, error: () => undefined, debug: () => undefined } });
  });
  after(async () => { await db?.destroy(); });

  const refusal = async (work: () => Promise<unknown>) => {
    const started = performance.now();
    try {
      await work();
      return { code: 'answered', ms: performance.now() - started };
    } catch (err) {
      return { code: (toStorageError(err) as { code?: string }).code ?? String(err), ms: performance.now() - started };
    }
  };

  it('fails a query past the deadline as STORAGE_UNAVAILABLE, by knex and by plain SQL, in and out of a transaction', async () => {
    for (const work of [
      () => db.raw('select pg_sleep(2)'),
      () => sqlQuery(db, 'select pg_sleep(2)'),
      () => inSqlTransaction(db, (tx) => tx.query('select pg_sleep(2)')),
      () => db.transaction((trx) => trx.raw('select pg_sleep(2)')),
    ]) {
      const r = await refusal(work);
      expect(r.code).to.equal('STORAGE_UNAVAILABLE');
      expect(r.ms, 'refused near the deadline, not after the query').to.be.below(1_500);
    }
  });

  it('drops the connection it timed out on: the pool answers the next queries on fresh ones', async () => {
    await refusal(() => db.raw('select pg_sleep(2)'));
    const rows = await Promise.all([1, 2, 3, 4].map(() => sqlQuery<{ one: number }>(db, 'select 1 as one')));
    expect(rows.map((r) => r[0]!.one)).to.deep.equal([1, 1, 1, 1]);
  });

  it('lets a query outlive the deadline while suspended (migrations)', async () => {
    expect((await refusal(() => suspendQueryDeadline(db, () => db.raw('select pg_sleep(0.5)')))).code).to.equal('answered');
    expect((await refusal(() => db.raw('select pg_sleep(0.5)'))).code, 'and the deadline holds again after').to.equal('STORAGE_UNAVAILABLE');
  });
});
