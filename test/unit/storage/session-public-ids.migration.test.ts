/**
 * Migration 0047 gives the sessions that exist the public id of spec 2.7 (decision 0068): SHA-256 of the tracker id,
 * computed by each engine's SQL, equal to what a client computes; the key they were shown under stays their `id`.
 */
import { createHash, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { sessionPublicIdsMigration } from '../../../storage/migrations/0047_session_public_ids.js';
import { dbEngines, type TestDb } from '../../support/db.js';

describe('migration 0047: session public ids', function () {
  for (const engine of dbEngines) {
    (engine.skip ? describe.skip : describe)(engine.name, function () {
      let db: TestDb;
      before(async function () {
        this.timeout(60_000);
        db = await engine.open('public-ids');
      });
      after(async () => {
        await db?.drop();
      });

      it('fills the public id of every existing session from its tracker id, keeping its key', async () => {
        await sessionPublicIdsMigration.down(db.knex);
        const orgId = randomUUID();
        await db.knex('orgs').insert({ id: orgId, name: 'Acme', slug: `acme-${orgId}` });
        const trackers = ['ENG-42', 'linear:ü-ünïcode', `troupe:${randomUUID()}`];
        const rows = trackers.map((tracker, i) => ({
          id: createHash('sha256').update(`${orgId}:${tracker}`).digest('hex').slice(0, 16), org_id: orgId, project_id: randomUUID(),
          tracker_session_id: tracker, prompt: 'p', requested_by: 'u', status: 'pending', epoch: 1,
          created_at: new Date(Date.UTC(2026, 0, 1, 0, i)), updated_at: new Date(),
        }));
        await db.knex('sessions').insert(rows);
        await sessionPublicIdsMigration.up(db.knex);
        const after = await db.knex('sessions').where({ org_id: orgId }).orderBy('created_at').select('id', 'public_id');
        expect(after).to.deep.equal(rows.map((r) => ({
          id: r.id, public_id: createHash('sha256').update(r.tracker_session_id, 'utf8').digest('hex').slice(0, 16),
        })));
      });
    });
  }
});
