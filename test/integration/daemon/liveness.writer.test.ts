// Invariant: the batched liveness write sets every worker of a batch to its recorded time rounded down to the second
// (also when split into chunks), never moves a worker's last_seen_at backwards, leaves unknown ids alone, and on
// Postgres several writers flushing overlapping batches at the same time never deadlock (keys sorted, rows locked in
// key order).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { dbEngines, type TestDb } from '../../support/db.js';
import { insertOrg } from '../../../storage/identity/orgs.js';
import { writeLiveness } from '../../../storage/sessions/daemon.js';

for (const engine of dbEngines) {
  (engine.skip ? describe.skip : describe)(`batched liveness write (${engine.name})`, function () {
    this.timeout(60_000);
    let db: TestDb;
    const ids = Array.from({ length: 300 }, () => randomUUID());
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    before(async () => {
      db = await engine.open('liveness_writer');
      const org = await insertOrg(db.knex, { id: randomUUID(), name: 'Acme', slug: `acme-${randomUUID().slice(0, 8)}`, plan: 'free' });
      await db.knex('daemon_workers').insert(ids.map((id) => ({
        id, org_id: org.id, registration_id: randomUUID(), hostname: 'h', max_agents: 1, project_ids: '[]',
        registered_at: new Date(t0), last_seen_at: new Date(t0),
      })));
    });
    after(() => db?.drop());

    const seen = async (k: Knex = db.knex): Promise<Map<string, number>> =>
      new Map((await k('daemon_workers').select('id', 'last_seen_at')).map((r: { id: string; last_seen_at: string }) => [r.id, new Date(r.last_seen_at).getTime()]));

    it('writes every worker of a chunked batch to the second of its heartbeat, forwards only, and ignores unknown ids', async () => {
      // Six seconds of 50 heartbeats each, at different milliseconds: more rows a second than a chunk holds.
      const secondOf = (i: number) => t0 + 1000 * (1 + Math.floor(i / 50));
      const batch = new Map(ids.map((id, i) => [id, secondOf(i) + (i % 50) * 17]));
      batch.set(randomUUID(), t0 + 5000);
      await writeLiveness(db.knex, batch, { chunkRows: 7 });
      const after1 = await seen();
      for (const [i, id] of ids.entries()) expect(after1.get(id), `worker ${i}`).to.equal(secondOf(i));
      expect(after1.size).to.equal(ids.length);
      await writeLiveness(db.knex, new Map([[ids[0]!, t0 + 10], [ids[1]!, t0 + 9000]]));
      const after2 = await seen();
      expect(after2.get(ids[0]!), 'an older time does not win').to.equal(t0 + 1000);
      expect(after2.get(ids[1]!)).to.equal(t0 + 9000);
    });

    if (engine.name === 'postgres') {
      it('lets four writers flush overlapping batches concurrently without a deadlock', async () => {
        const writers = await Promise.all(Array.from({ length: 4 }, () => db.reopen()));
        try {
          let clock = t0 + 100_000;
          await Promise.all(writers.map(async (k) => {
            for (let round = 0; round < 15; round++) {
              // Each batch in a different (shuffled) order: sorting is the writer's job.
              const shuffled = [...ids].sort(() => Math.random() - 0.5).slice(0, 200);
              await writeLiveness(k, new Map(shuffled.map((id) => [id, ++clock])));
            }
          }));
          const last = await seen();
          for (const id of ids) expect(last.get(id)).to.be.greaterThan(t0 + 100_000 - 1);
        } finally {
          await Promise.all(writers.map((k) => k.destroy()));
        }
      });
    }
  });
}
