/**
 * Invariant: each org's audit log is an unbroken hash chain. Appends get seq 1, 2, 3 … with no gaps or duplicates
 * even when many run at once from several connections; verifyAudit accepts an untouched chain and names the first
 * seq where a tampered or removed row breaks it; stored rows refuse UPDATE and DELETE; an entry appended inside a
 * transaction that rolls back leaves no trace and no gap. Runs on PGlite and on real Postgres.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { TroupeError } from '../../../ops/kernel/errors.js';
import { appendAudit, GENESIS_HASH, listAudit, verifyAudit } from '../../../storage/audit-log.js';
import { dbEngines, type TestDb } from '../../support/db.js';

let unique = 0;
const newOrg = () => `org_${process.pid}_${++unique}`;

async function appendMany(knex: Knex, orgId: string, count: number): Promise<void> {
  for (let i = 1; i <= count; i++) {
    await appendAudit(knex, { orgId, type: 'workflow.version_created', actor: 'user_1', subject: `wf_${i}`, payload: { version: i, reason: `change ${i}` } });
  }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  expect.fail('expected the promise to reject');
}

/** Runs `change` with the immutability triggers off, as an attacker with table-owner rights could. */
async function tamper(knex: Knex, change: (trx: Knex.Transaction) => Promise<unknown>): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw('alter table audit_log disable trigger user');
    await change(trx);
    await trx.raw('alter table audit_log enable trigger user');
  });
}

for (const engine of dbEngines) {
  (engine.skip ? describe.skip : describe)(`audit log hash chain: ${engine.name}`, function () {
    let db: TestDb;
    before(async function () {
      this.timeout(60_000); // the first PGlite of a process runs initdb, slow on a busy machine
      db = await engine.open('audit');
    });
    after(async function () {
      await db?.drop();
    });

    it('appends from seq 1 with a genesis prev_hash, each entry linking to the one before', async function () {
      const orgId = newOrg();
      const first = await appendAudit(db.knex, { orgId, type: 'org.created', actor: 'admin', payload: { name: 'Acme' } });
      const second = await appendAudit(db.knex, { orgId, type: 'user.added', actor: 'admin', subject: 'user_1' });
      expect(first.seq).to.equal(1);
      expect(second.seq).to.equal(2);
      expect(first.hash).to.match(/^[0-9a-f]{64}$/);
      const { entries } = await listAudit(db.knex, orgId);
      expect(entries.map((e) => e.seq)).to.deep.equal([2, 1]);
      expect(entries[1]).to.include({ prevHash: GENESIS_HASH, hash: first.hash, type: 'org.created', actor: 'admin', subject: null });
      expect(entries[1]?.payload).to.deep.equal({ name: 'Acme' });
      expect(entries[0]).to.include({ prevHash: first.hash, hash: second.hash, subject: 'user_1' });
      expect(await verifyAudit(db.knex, orgId)).to.deep.equal({ valid: true, checked: 2 });
    });

    it('records an empty subject as no subject', async function () {
      const orgId = newOrg();
      await appendAudit(db.knex, { orgId, type: 't', actor: 'a', subject: '' });
      expect((await listAudit(db.knex, orgId)).entries[0]?.subject).to.equal(null);
      expect((await verifyAudit(db.knex, orgId)).valid).to.equal(true);
    });

    it('keeps one chain per org', async function () {
      const a = newOrg();
      const b = newOrg();
      await appendMany(db.knex, a, 3);
      const firstOfB = await appendAudit(db.knex, { orgId: b, type: 't', actor: 'x' });
      expect(firstOfB.seq).to.equal(1);
      expect((await listAudit(db.knex, b)).entries).to.have.length(1);
      expect(await verifyAudit(db.knex, a)).to.deep.equal({ valid: true, checked: 3 });
    });

    it('pages newest first with a cursor until the end', async function () {
      const orgId = newOrg();
      await appendMany(db.knex, orgId, 7);
      const seen: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = await listAudit(db.knex, orgId, { limit: 3, cursor });
        seen.push(...page.entries.map((e) => e.seq));
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor !== null);
      expect(seen).to.deep.equal([7, 6, 5, 4, 3, 2, 1]);
      expect(pages).to.equal(3);
    });

    it('refuses a hostile cursor or limit as a bad query', async function () {
      for (const opts of [{ cursor: "1; drop table audit_log" }, { cursor: '-1' }, { cursor: '9'.repeat(40) }, { limit: 0 }, { limit: 2.5 }]) {
        const err = await rejection(listAudit(db.knex, 'org', opts));
        expect(err).to.be.instanceOf(TroupeError);
        expect((err as TroupeError).code).to.equal('HTTP_BAD_QUERY');
      }
    });

    it('verifies an empty chain as valid', async function () {
      expect(await verifyAudit(db.knex, newOrg())).to.deep.equal({ valid: true, checked: 0 });
    });

    it('refuses UPDATE, DELETE and TRUNCATE of stored entries', async function () {
      const orgId = newOrg();
      await appendMany(db.knex, orgId, 1);
      expect(String(await rejection(db.knex('audit_log').where({ org_id: orgId }).update({ actor: 'mallory' })))).to.match(/immutable/);
      expect(String(await rejection(db.knex('audit_log').where({ org_id: orgId }).delete()))).to.match(/immutable/);
      expect(String(await rejection(db.knex.raw('truncate audit_log')))).to.match(/immutable/);
      expect(await verifyAudit(db.knex, orgId)).to.deep.equal({ valid: true, checked: 1 });
    });

    it('names the first broken seq when a payload is rewritten', async function () {
      const orgId = newOrg();
      await appendMany(db.knex, orgId, 5);
      await tamper(db.knex, (trx) => trx('audit_log').where({ org_id: orgId, seq: 3 }).update({ payload: JSON.stringify({ version: 3, reason: 'nothing to see' }) }));
      expect(await verifyAudit(db.knex, orgId)).to.deep.equal({ valid: false, checked: 3, firstBrokenSeq: 3 });
    });

    it('names the first broken seq when a row is rewritten with a recomputed hash of its own', async function () {
      const orgId = newOrg();
      await appendMany(db.knex, orgId, 4);
      // Re-hashing row 2 consistently still breaks row 3, whose prev_hash pointed at the original.
      const { entries } = await listAudit(db.knex, orgId);
      const row2 = entries.find((e) => e.seq === 2)!;
      const { chainHash } = await import('../../../storage/audit-log.js');
      const forged = chainHash(row2.prevHash, { ...row2, actor: 'mallory' });
      await tamper(db.knex, (trx) => trx('audit_log').where({ org_id: orgId, seq: 2 }).update({ actor: 'mallory', hash: forged }));
      expect(await verifyAudit(db.knex, orgId)).to.deep.equal({ valid: false, checked: 3, firstBrokenSeq: 3 });
    });

    it('names the missing seq when a row in the middle is deleted', async function () {
      const orgId = newOrg();
      await appendMany(db.knex, orgId, 5);
      await tamper(db.knex, (trx) => trx('audit_log').where({ org_id: orgId, seq: 2 }).delete());
      expect(await verifyAudit(db.knex, orgId)).to.deep.equal({ valid: false, checked: 2, firstBrokenSeq: 2 });
    });

    it('appends inside the caller transaction: a rollback leaves neither the entry nor a gap', async function () {
      const orgId = newOrg();
      await appendMany(db.knex, orgId, 1);
      const err = await rejection(
        db.knex.transaction(async (trx) => {
          await appendAudit(trx, { orgId, type: 'doomed', actor: 'x' });
          throw new Error('the change being audited failed');
        }),
      );
      expect(String(err)).to.match(/the change being audited failed/);
      expect((await appendAudit(db.knex, { orgId, type: 'next', actor: 'x' })).seq).to.equal(2);
      expect(await verifyAudit(db.knex, orgId)).to.deep.equal({ valid: true, checked: 2 });
    });

    it('refuses entries it cannot store faithfully', async function () {
      for (const input of [
        { orgId: '', type: 't', actor: 'a' },
        { orgId: 'o', type: '', actor: 'a' },
        { orgId: 'o', type: 't', actor: 'x'.repeat(600) },
        { orgId: 'o', type: 't', actor: 'a', payload: { blob: 'x'.repeat(70_000) } },
        { orgId: newOrg(), type: 't', actor: 'a', payload: { text: 'nul\u0000byte' } },
        { orgId: 'o', type: 't', actor: 'a', at: new Date('not a date') },
      ]) {
        const err = await rejection(appendAudit(db.knex, input));
        expect(err).to.be.instanceOf(TroupeError);
        expect((err as TroupeError).code).to.equal('VALIDATION_FAILED');
      }
    });

    it('keeps seq gap-free under concurrent appends from several connections', async function () {
      this.timeout(60_000);
      const orgId = newOrg();
      const connections = db.kind === 'postgres' ? [db.knex, await db.reopen(), await db.reopen()] : [db.knex];
      const appends = Array.from({ length: 60 }, (_, i) =>
        appendAudit(connections[i % connections.length]!, { orgId, type: 'concurrent', actor: `writer_${i}`, payload: { i } }),
      );
      const seqs = (await Promise.all(appends)).map((r) => r.seq).sort((x, y) => x - y);
      expect(seqs).to.deep.equal(Array.from({ length: 60 }, (_, i) => i + 1));
      expect(await verifyAudit(db.knex, orgId)).to.deep.equal({ valid: true, checked: 60 });
    });
  });
}
