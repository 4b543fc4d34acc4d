// Invariant: every append-only table refuses UPDATE, DELETE and TRUNCATE in the database itself, through the one
// shared definition, whatever code path (or operator) tries.
import { expect } from 'chai';
import { withPgliteDb, type TestDb } from '../../support/db.js';

const immutableTables = ['audit_log', 'workflow_versions', 'policy_versions', 'authoring_proposal_versions', 'template_versions'];

describe('append-only tables', function () {
  this.timeout(60_000);
  let db: TestDb;
  before(async () => { db = await withPgliteDb(); });
  after(() => db?.drop());

  for (const table of immutableTables) {
    it(`${table} has row and truncate guards, and refuses truncate`, async () => {
      const triggers = await db.knex.raw(
        `select tgname, pg_get_triggerdef(oid) as def from pg_trigger where tgrelid = ?::regclass and not tgisinternal order by tgname`, [table]);
      const defs = (triggers.rows as Array<{ tgname: string; def: string }>).map((r) => r.def.toLowerCase());
      expect(defs.some((d) => d.includes('update') && d.includes('delete') && d.includes('for each row')), `${table} row trigger`).to.equal(true);
      expect(defs.some((d) => d.includes('before truncate')), `${table} truncate trigger`).to.equal(true);
      const refused = await db.knex.raw(`truncate ${table} cascade`).then(() => 'allowed', (err: Error) => err.message);
      expect(refused).to.match(new RegExp(`${table} rows are immutable`));
    });
  }
});
