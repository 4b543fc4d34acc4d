// Invariant (issue 20, decision 0058): when Postgres stops answering on the connections the pool already holds (a hung
// server: sockets open, nothing said), the first query to miss its deadline opens the connection breaker, so the
// queries after it are refused at once rather than each waiting out a deadline of its own; while it stays silent a
// trial proves itself with a round trip before the breaker closes; one slow query on a server that answers the others
// refuses nobody else, nor does one slow query alone on an idle server, nor a new connection that times out while the
// open ones are answered. Runs against the real Postgres through a TCP proxy that goes silent on demand.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createDb } from '../../../storage/db.js';
import { toStorageError } from '../../../storage/storage-errors.js';
import { engines, skipEngine } from '../../support/engines.js';
import { FaultProxy } from '../../faults/proxy.js';

const DEADLINE_MS = 600;

(skipEngine.postgres ? describe.skip : describe)('storage: the breaker opens on the first missed query deadline', function () {
  this.timeout(30_000);
  let proxy: FaultProxy;
  let db: Knex;
  const warnings: string[] = [];

  beforeEach(async () => {
    proxy = await FaultProxy.start(Number(new URL(engines.postgres).port || 5432));
    db = await createDb({
      databaseUrl: proxy.urlFor(engines.postgres), poolMax: 4, queryTimeoutMs: DEADLINE_MS,
      log: { warn: (m) => warnings.push(m), error: () => undefined, debug: () => undefined },
    });
    // Four open connections in the pool, as a busy node has when its database hangs.
    await Promise.all([1, 2, 3, 4].map(() => db.raw('select pg_sleep(0.05)')));
  });
  afterEach(async () => {
    proxy.heal();
    await db?.destroy();
    await proxy?.close();
  });

  const timed = async (query: () => Promise<unknown>) => {
    const started = performance.now();
    try {
      await query();
      return { ok: true, code: undefined, ms: performance.now() - started };
    } catch (err) {
      return { ok: false, code: (toStorageError(err) as { code?: string }).code ?? String(err), ms: performance.now() - started };
    }
  };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('refuses at once after the first missed deadline while the server is silent, and recovers once it answers', async () => {
    proxy.blackhole(true);
    // Two queries waiting: a lone slow query on an idle server proves nothing about the server (last test).
    const [first] = await Promise.all([timed(() => db.raw('select 1')), timed(() => db.raw('select 2'))]);
    expect(first).to.include({ ok: false, code: 'STORAGE_UNAVAILABLE' });
    expect(first.ms, 'the first query waits out its deadline').to.be.within(DEADLINE_MS - 20, DEADLINE_MS + 700);
    expect(warnings.some((w) => w.includes('postgres is unreachable') && w.includes(`no answer to a query within ${DEADLINE_MS} ms`)), warnings.join('\n')).to.equal(true);
    // Two idle connections are still open in the pool: without the breaker each of these would take one and wait
    // out a deadline of its own. (Sent a moment later, as the next requests would be: the breaker opens once the
    // turn that missed the deadline has read its I/O.)
    await sleep(20);
    const next = await Promise.all([1, 2].map(() => timed(() => db.raw('select 1'))));
    for (const r of next) {
      expect(r.code).to.equal('STORAGE_UNAVAILABLE');
      expect(r.ms, 'refused at once').to.be.below(100);
    }
    proxy.heal();
    const healed = performance.now();
    let answered = false;
    while (!answered && performance.now() - healed < 3_000) {
      answered = (await timed(() => db.raw('select 1'))).ok;
      if (!answered) await sleep(20);
    }
    expect(answered, 'queries answered again after the heal').to.equal(true);
    expect(performance.now() - healed, 'within a trial interval and a round trip').to.be.below(1_000);
  });

  it('stays open while the server is silent: a trial that gets an open connection must have it answer first', async () => {
    proxy.blackhole(true);
    await Promise.all([timed(() => db.raw('select 1')), timed(() => db.raw('select 2'))]);
    // 1.5 s of queries every 30 ms; trials come every 250 ms at most and each waits out its probe's deadline. Were a
    // handed-out connection taken as proof, the breaker would close on the first trial and every query after it
    // would wait out a deadline on an open, silent connection.
    const results: Array<Awaited<ReturnType<typeof timed>>> = [];
    const pending: Array<Promise<void>> = [];
    const started = performance.now();
    while (performance.now() - started < 1_500) {
      pending.push(timed(() => db.raw('select 1')).then((r) => { results.push(r); }));
      await sleep(30);
    }
    await Promise.all(pending);
    expect(results.every((r) => !r.ok && r.code === 'STORAGE_UNAVAILABLE'), JSON.stringify(results)).to.equal(true);
    const waited = results.filter((r) => r.ms >= DEADLINE_MS - 20);
    expect(waited.length, `queries that waited out a deadline (trials) of ${results.length}`).to.be.at.most(4);
  });

  it('a new connection that times out opens the breaker only while the server answers nothing on the others', async () => {
    // What the pool reports when pg's connection timeout expires (a server forking backends on two loaded cores can
    // take that long while its open connections answer in milliseconds).
    const connectTimedOut = () => (db.client as { pool: { emitter: { emit(e: string, id: number, err: Error): void } } }).pool.emitter.emit('createFail', 0, new Error('timeout expired'));
    await db.raw('select 1');
    connectTimedOut();
    const busy = await timed(() => db.raw('select 1'));
    expect(busy.ok, `a query right after, while the server answers: ${JSON.stringify(busy)}`).to.equal(true);
    await sleep(DEADLINE_MS / 3 + 100);
    connectTimedOut();
    const silent = await timed(() => db.raw('select 1'));
    expect(silent, 'after a third of the deadline without an answer: the server may be gone').to.include({ ok: false, code: 'STORAGE_UNAVAILABLE' });
    expect(silent.ms).to.be.below(100);
  });

  it('does not open for one slow query alone on an idle server', async () => {
    const slow = await timed(() => db.raw('select pg_sleep(1)'));
    expect(slow.code).to.equal('STORAGE_UNAVAILABLE');
    const next = await timed(() => db.raw('select 1'));
    expect(next.ok, 'the next query is answered, not refused').to.equal(true);
  });

  it('does not open for one slow query while the server answers the others', async () => {
    const slow = timed(() => db.raw('select pg_sleep(1)'));
    const others: Array<Awaited<ReturnType<typeof timed>>> = [];
    const started = performance.now();
    while (performance.now() - started < 1_000) {
      others.push(await timed(() => db.raw('select 1')));
      await sleep(20);
    }
    const slowResult = await slow;
    expect(slowResult.code, 'the slow query itself fails at its deadline').to.equal('STORAGE_UNAVAILABLE');
    expect(others.length).to.be.above(10);
    expect(others.filter((r) => !r.ok), 'nobody else is refused for it').to.deep.equal([]);
  });
});
