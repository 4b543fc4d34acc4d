// Invariant (decision 0045, second part): writes that arrive while a group commits share the next transaction, and each write
// still meets exactly the outcome it would have met alone: a write that declines fails by itself while the rest of
// its group commits; a write whose statement fails rolls its group back, and then every other write of that group
// commits alone while the failing one fails and leaves nothing behind. A write of one statement (decision 0055) commits
// by itself when it is alone, with no BEGIN and COMMIT, shares a group's transaction when it waited behind one, and
// leaves nothing when its statement fails.
import { expect } from 'chai';
import { CommitGroups, type GroupedWrite } from '../../../storage/commit-group.js';
import { dbEngines, type TestDb } from '../../support/db.js';
import { watchStatements } from '../../support/statement-watch.js';

for (const engine of dbEngines) {
  describe(`commit groups on ${engine.name}`, function () {
    this.timeout(120_000);
    let db: TestDb;

    before(async function () {
      if (engine.skip) this.skip();
      db = await engine.open('commit_group');
      await db.knex.raw('create table group_test (id text primary key, n integer not null)');
    });
    after(() => db?.drop());

    const rows = async (prefix: string) =>
      (await db.knex('group_test').where('id', 'like', `${prefix}%`).orderBy('id')).map((r: { id: string }) => r.id);

    /** Inserts `id` and answers the transaction it ran in. */
    const insert = (id: string): GroupedWrite<string> => async (tx) => {
      await tx.query('insert into group_test (id, n) values ($1, 1)', [id]);
      const txid = await tx.query<{ txid: string }>('select txid_current()::text as txid');
      return { ok: true, value: txid.rows[0]!.txid };
    };

    it('commits writes that waited behind a group together, in one transaction', async () => {
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      let started!: () => void;
      const holding = new Promise<void>((resolve) => { started = resolve; });
      const first = groups.run('a-0', async (tx) => {
        started();
        await held;
        return insert('a-0')(tx);
      });
      await holding;
      const waiting = [1, 2, 3, 4, 5].map((i) => groups.run(`a-${i}`, insert(`a-${i}`)));
      release();
      const [firstTx, ...rest] = await Promise.all([first, ...waiting]);
      expect(new Set(rest).size, 'the five that waited share one transaction').to.equal(1);
      expect(rest[0]).to.not.equal(firstTx);
      expect(await rows('a-')).to.deep.equal(['a-0', 'a-1', 'a-2', 'a-3', 'a-4', 'a-5']);
    });

    it('a write that declines fails alone; the rest of its group commits', async () => {
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      const refused = new Error('nothing to do');
      const outcomes = await Promise.allSettled([
        groups.run('b-1', insert('b-1')),
        groups.run('b-1x', async () => ({ ok: false, error: refused })),
        groups.run('b-2', insert('b-2')),
        groups.run('b-3', insert('b-3')),
      ]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).to.equal(refused);
      expect(await rows('b-')).to.deep.equal(['b-1', 'b-2', 'b-3']);
    });

    it('a failing statement rolls its group back; the others then commit alone and the failing one leaves nothing', async () => {
      await db.knex('group_test').insert({ id: 'c-taken', n: 1 });
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      const first = groups.run('c-0', async (tx) => { await held; return insert('c-0')(tx); });
      const clashing: GroupedWrite<string> = async (tx) => {
        await tx.query('insert into group_test (id, n) values ($1, 1)', ['c-partial']);
        await tx.query('insert into group_test (id, n) values ($1, 1)', ['c-taken']);
        return { ok: true, value: 'never' };
      };
      const group = [groups.run('c-1', insert('c-1')), groups.run('c-1x', clashing), groups.run('c-2', insert('c-2'))];
      release();
      const outcomes = await Promise.allSettled([first, ...group]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      const [, one, , two] = outcomes as Array<PromiseFulfilledResult<string>>;
      expect(one!.value, 'each committed in a transaction of its own').to.not.equal(two!.value);
      expect(await rows('c-')).to.deep.equal(['c-0', 'c-1', 'c-2', 'c-taken']);
    });

    it('runs the writes of a group in the order of their keys, as the sorted batch writers lock rows', async () => {
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      const first = groups.run('e-0', async (tx) => { await held; return insert('e-0')(tx); });
      const position = (id: string): GroupedWrite<number> => async (tx) => {
        await tx.query('insert into group_test (id, n) values ($1, 1)', [id]);
        const seen = await tx.query<{ n: number | string }>(`select count(*) as n from group_test where id like 'e-%'`);
        return { ok: true, value: Number(seen.rows[0]!.n) };
      };
      const arrivals = ['e-3', 'e-1', 'e-2'].map((key) => groups.run(key, position(key)));
      release();
      await first;
      expect(await Promise.all(arrivals), 'e-1 wrote second, e-2 third, e-3 fourth').to.deep.equal([4, 2, 3]);
    });

    it('with groups to spare, a write does not wait for a group that is still committing', async function () {
      // PGlite has one connection: there, a second group waits for the pool whatever the setting.
      if (engine.name === 'pglite') this.skip();
      const groups = new CommitGroups(db.knex, { concurrency: 2 });
      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      const first = groups.run('f-0', async (tx) => { await held; return insert('f-0')(tx); });
      await groups.run('f-1', insert('f-1'));
      expect(await rows('f-'), 'f-1 committed while f-0 was still held').to.deep.equal(['f-1']);
      release();
      await first;
      expect(await rows('f-')).to.deep.equal(['f-0', 'f-1']);
    });

    it('commits a write at once when nothing else is committing', async () => {
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      const tx1 = await groups.run('d-1', insert('d-1'));
      const tx2 = await groups.run('d-2', insert('d-2'));
      expect(tx1).to.not.equal(tx2);
      expect(await rows('d-')).to.deep.equal(['d-1', 'd-2']);
    });

    /** One statement: inserts `id` and says in which transaction. */
    const insertOne = (id: string): GroupedWrite<{ txid: string }> => async (tx) => {
      const r = await tx.query<{ txid: string }>('with w as (insert into group_test (id, n) values ($1, 1)) select txid_current()::text as txid', [id]);
      return { ok: true, value: r.rows[0]! };
    };

    /** The verbs of the statements `work` sends down the pool's connections. */
    async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
      const seen: string[] = [];
      await watchStatements(db.knex, ({ text }) => seen.push(text), work);
      return seen.map((t) => t.split(' ')[0]!.toLowerCase());
    }

    it('a one-statement write alone commits by itself, without BEGIN and COMMIT', async () => {
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      expect(await statementsOf(() => groups.run('g-1', insertOne('g-1'), true))).to.deep.equal(['with']);
      expect(await rows('g-')).to.deep.equal(['g-1']);
      expect(await statementsOf(() => groups.run('g-2', insertOne('g-2'))), 'a write not said to be one statement')
        .to.deep.equal(['begin', 'with', 'commit']);
    });

    it('one-statement writes that waited behind a group share its transaction', async () => {
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      const first = groups.run('h-0', async (tx) => { await held; return insert('h-0')(tx); });
      const waiting = [1, 2, 3].map((i) => groups.run(`h-${i}`, insertOne(`h-${i}`), true));
      release();
      await first;
      const outcomes = await Promise.all(waiting);
      expect(new Set(outcomes.map((o) => o.txid)).size).to.equal(1);
      expect(await rows('h-')).to.deep.equal(['h-0', 'h-1', 'h-2', 'h-3']);
    });

    it('a one-statement write that fails alone leaves nothing, and a second statement from it is refused', async () => {
      await db.knex('group_test').insert({ id: 'i-taken', n: 1 });
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      const clashing: GroupedWrite<string> = async (tx) => {
        await tx.query(`with w as (insert into group_test (id, n) values ('i-partial', 1)) insert into group_test (id, n) values ('i-taken', 1)`);
        return { ok: true, value: 'never' };
      };
      const failed = await groups.run('i-1', clashing, true).then(() => undefined, (err: unknown) => err);
      expect(failed).to.be.instanceOf(Error);
      const twice: GroupedWrite<string> = async (tx) => {
        await tx.query(`insert into group_test (id, n) values ('i-first', 1)`);
        await tx.query(`insert into group_test (id, n) values ('i-second', 1)`);
        return { ok: true, value: 'never' };
      };
      const refused = await groups.run('i-2', twice, true).then(() => undefined, (err: unknown) => err);
      expect(String(refused)).to.match(/second statement/);
      expect(await rows('i-'), 'the refused second statement never ran').to.deep.equal(['i-first', 'i-taken']);
    });

    /** Holds a group (not one statement, so it runs in turn) until the returned release is called. */
    function holdGroup(groups: CommitGroups, id: string): { first: Promise<string>; release: () => void } {
      let release!: () => void;
      const held = new Promise<void>((resolve) => { release = resolve; });
      return { first: groups.run(id, async (tx) => { await held; return insert(id)(tx); }), release };
    }

    /** For each statement sent while `work` runs: whether some statement sent before it had been answered by then. */
    async function answeredBeforeEachSend(work: () => Promise<unknown>): Promise<Array<{ verb: string; afterAnAnswer: boolean }>> {
      const sent: Array<{ verb: string; afterAnAnswer: boolean }> = [];
      let answered = 0;
      const count = () => { answered += 1; };
      await watchStatements(db.knex, ({ text, returned }) => {
        sent.push({ verb: text.split(' ')[0]!.toLowerCase(), afterAnAnswer: answered > 0 });
        // Counted on the answer itself, before whoever awaits it can send the next statement.
        void (returned as Promise<unknown>).then(count, count);
      }, work);
      return sent;
    }

    it('a one-statement write whose statement fails in a group: the group writes nothing, the others then commit alone', async () => {
      await db.knex('group_test').insert({ id: 'q-taken', n: 1 });
      const groups = new CommitGroups(db.knex, { concurrency: 1 });
      const { first, release } = holdGroup(groups, 'q-0');
      const clashing: GroupedWrite<string> = async (tx) => {
        await tx.query(`with w as (insert into group_test (id, n) values ('q-partial', 1)) insert into group_test (id, n) values ('q-taken', 1)`);
        return { ok: true, value: 'never' };
      };
      const declining: GroupedWrite<string> = async (tx) => {
        await tx.query('select 1');
        return { ok: false, error: new Error('stale') };
      };
      const group = [
        groups.run('q-1', insertOne('q-1'), true), groups.run('q-2', clashing, true),
        groups.run('q-3', declining, true), groups.run('q-4', insertOne('q-4'), true),
      ];
      release();
      await first;
      const outcomes = await Promise.allSettled(group);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
      expect(String((outcomes[2] as PromiseRejectedResult).reason)).to.match(/stale/);
      const [one, , , four] = outcomes as PromiseFulfilledResult<{ txid: string }>[];
      expect(one!.value.txid, 'committed alone, each in its own transaction').to.not.equal(four!.value.txid);
      expect(await rows('q-')).to.deep.equal(['q-0', 'q-1', 'q-4', 'q-taken']);
    });

    // Only Postgres pipelines (PGlite has one connection and runs a group's writes in turn, each write's statements
    // inside the group's transaction however many there are).
    if (engine.name === 'postgres') {
      it('on Postgres, a group of one-statement writes is sent whole before its first answer (pipelined)', async () => {
        const groups = new CommitGroups(db.knex, { concurrency: 1 });
        const { first, release } = holdGroup(groups, 'p-0');
        await new Promise((resolve) => setImmediate(resolve));
        const sent = await answeredBeforeEachSend(async () => {
          const waiting = [1, 2, 3].map((i) => groups.run(`p-${i}`, insertOne(`p-${i}`), true));
          release();
          await first;
          const outcomes = await Promise.all(waiting);
          expect(new Set(outcomes.map((o) => o.txid)).size, 'one transaction').to.equal(1);
        });
        // The held group had its connection before the watch began; the group after it, pipelined, is all it saw.
        expect(sent.map((s) => s.verb)).to.deep.equal(['begin', 'with', 'with', 'with', 'commit']);
        expect(sent.filter((s) => s.afterAnAnswer), 'statements sent only after an answer came').to.deep.equal([]);
        expect(await rows('p-')).to.deep.equal(['p-0', 'p-1', 'p-2', 'p-3']);
      });

      it('on Postgres, a one-statement write that issues a second statement after an await fails alone; its group commits once', async () => {
        const groups = new CommitGroups(db.knex, { concurrency: 1 });
        const { first, release } = holdGroup(groups, 'r-0');
        const twice: GroupedWrite<string> = async (tx) => {
          await tx.query(`insert into group_test (id, n) values ('r-first', 1)`);
          await tx.query(`insert into group_test (id, n) values ('r-second', 1)`);
          return { ok: true, value: 'never' };
        };
        const group = [groups.run('r-1', insertOne('r-1'), true), groups.run('r-2', twice, true), groups.run('r-3', insertOne('r-3'), true)];
        release();
        await first;
        const outcomes = await Promise.allSettled(group);
        expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
        expect(String((outcomes[1] as PromiseRejectedResult).reason)).to.match(/statement/);
        expect(await rows('r-'), 'r-first committed with its group, nothing ran twice, the late statement never ran').to.deep.equal(['r-0', 'r-1', 'r-3', 'r-first']);
      });
    }
  });
}
