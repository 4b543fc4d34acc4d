/**
 * Invariant: an entry recorded in the audit outbox reaches its org's chain exactly once, at the time it happened,
 * whatever drains it (several drains at once, a node that starts after the one that recorded it crashed), and an
 * entry recorded in a transaction that rolls back never reaches it. Runs on PGlite and on real Postgres.
 */
import { expect } from 'chai';
import { listAudit, verifyAudit } from '../../../storage/audit-log.js';
import { auditOutboxDepth, drainAuditOutbox, recordAuditLater } from '../../../storage/audit-outbox.js';
import { AuditOutbox } from '../../../actors/services/audit/outbox-drain.js';
import { silentLogger } from '../../../ops/kernel/logger.js';
import { dbEngines, type TestDb } from '../../support/db.js';

let unique = 0;
const newOrg = () => `org_outbox_${process.pid}_${++unique}`;

for (const engine of dbEngines) {
  (engine.skip ? describe.skip : describe)(`audit outbox on ${engine.name}`, function () {
    this.timeout(30_000);
    let db: TestDb;
    before(async () => { db = await engine.open('audit_outbox'); });
    after(async () => { await db?.drop(); });

    it('moves each entry into the chain once, in order, with concurrent drains', async () => {
      const orgs = [newOrg(), newOrg()];
      for (let i = 0; i < 300; i++) {
        const orgId = orgs[i % 2]!;
        await recordAuditLater(db.knex, { orgId, type: 'key.created', actor: 'user:u1', subject: `k${i}`, payload: { i }, at: new Date(1_700_000_000_000 + i) });
      }
      const moved = await Promise.all([drainAuditOutbox(db.knex, 50), drainAuditOutbox(db.knex, 50), drainAuditOutbox(db.knex, 50)]);
      let total = moved.reduce((a, b) => a + b, 0);
      while ((await auditOutboxDepth(db.knex)) > 0) total += await drainAuditOutbox(db.knex, 50);
      expect(total).to.equal(300);
      for (const orgId of orgs) {
        const { entries } = await listAudit(db.knex, orgId, { limit: 500 });
        expect(entries).to.have.length(150);
        expect(new Set(entries.map((e) => e.subject)).size, 'no entry twice').to.equal(150);
        expect((await verifyAudit(db.knex, orgId)).valid).to.equal(true);
        const k7 = entries.find((e) => e.subject === (orgId === orgs[0] ? 'k6' : 'k7'))!;
        expect(Date.parse(k7.createdAt) - 1_700_000_000_000, 'the time it happened is kept').to.equal(orgId === orgs[0] ? 6 : 7);
      }
    });

    it("a node started after a crash drains what the crashed node recorded; a rolled-back change's entry never appears", async () => {
      const orgId = newOrg();
      // The recording node died before its drain ran: only the outbox row exists.
      await recordAuditLater(db.knex, { orgId, type: 'credential.rotated', actor: 'apiKey:k', subject: 'github-token', payload: {}, at: new Date() });
      await db.knex.transaction(async (trx) => {
        await recordAuditLater(trx, { orgId, type: 'credential.stored', actor: 'apiKey:k', subject: 'never', payload: {}, at: new Date() });
        await trx.rollback();
      }).catch(() => undefined);
      const next = new AuditOutbox(db.knex, silentLogger());
      next.start();
      await next.stop();
      const { entries } = await listAudit(db.knex, orgId);
      expect(entries.map((e) => e.type)).to.deep.equal(['credential.rotated']);
    });
  });
}
