// Invariant (issue 20): when Postgres stops answering connections, queries waiting for a pooled connection and new
// ones fail within a fraction of a second with STORAGE_UNAVAILABLE (a 503 with Retry-After), instead of each waiting
// out the pool's acquire timeout; once Postgres accepts connections again, queries succeed within a trial interval.
// Runs against the real Postgres through a TCP proxy that refuses connections on demand.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createDb } from '../../../storage/db.js';
import { toStorageError } from '../../../storage/storage-errors.js';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { engines, skipEngine } from '../../support/engines.js';
import { FaultProxy } from '../../faults/proxy.js';

(skipEngine.postgres ? describe.skip : describe)('storage: the connection breaker in front of the Postgres pool', function () {
  this.timeout(30_000);
  let proxy: FaultProxy;
  let db: Knex;
  const warnings: string[] = [];

  before(async () => {
    proxy = await FaultProxy.start(Number(new URL(engines.postgres).port || 5432));
    db = await createDb({
      databaseUrl: proxy.urlFor(engines.postgres), poolMax: 4,
      log: { warn: (m) => warnings.push(m), error: () => undefined, debug: () => undefined },
    });
  });
  after(async () => {
    await db?.destroy();
    await proxy?.close();
  });

  const timed = async (query: () => Promise<unknown>) => {
    const started = performance.now();
    try {
      await query();
      return { ok: true, ms: performance.now() - started, error: undefined };
    } catch (error) {
      return { ok: false, ms: performance.now() - started, error };
    }
  };

  it('fails every waiting and new query at once while connections are refused, then recovers', async () => {
    expect((await db.raw('select 1 as ok')).rows[0].ok).to.equal(1);
    // Postgres "goes away": open connections reset, new ones refused.
    proxy.refuse(true);
    proxy.resetAll();
    const burst = await Promise.all(Array.from({ length: 60 }, () => timed(() => db.raw('select pg_sleep(0.01)'))));
    const failed = burst.filter((r) => !r.ok);
    expect(failed.length, 'every query while refused fails').to.equal(60);
    for (const r of failed) {
      // knex's own errors are translated where storage meets its callers (storage-errors.ts; the HTTP edge).
      const translated = toStorageError(r.error);
      expect(translated, String(r.error)).to.be.instanceOf(TroupeError);
      expect((translated as TroupeError).code).to.equal('STORAGE_UNAVAILABLE');
    }
    const slowest = Math.max(...burst.map((r) => r.ms));
    expect(slowest, 'no query waits out the 5 s acquire timeout').to.be.below(1_000);
    expect(warnings.some((w) => w.includes('postgres is unreachable'))).to.equal(true);

    // Later queries are refused at once, without a connection attempt each.
    const later = await timed(() => db.raw('select 1'));
    expect(later.ok).to.equal(false);
    expect(later.ms).to.be.below(300);

    proxy.heal();
    const started = Date.now();
    let recovered = false;
    while (Date.now() - started < 3_000 && !recovered) {
      recovered = (await timed(() => db.raw('select 1'))).ok;
      if (!recovered) await new Promise((r) => setTimeout(r, 50));
    }
    expect(recovered, 'queries succeed again after the heal').to.equal(true);
    expect(Date.now() - started).to.be.below(1_000);
    expect(warnings.some((w) => w.includes('accepts connections again'))).to.equal(true);
  });
});
