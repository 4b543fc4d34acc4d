// Invariant: the terminal effects of a session run (quota accounted, activity created, claim released, inbox
// archived, issue lock released and the next waiting session promoted) happen exactly once, even when the projection
// of the same terminal transition is replayed after a crash; a second session for the same tracker issue waits for
// the lock until the first one ends.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { dbEngines } from '../../support/db.js';
import type { TestDb } from '../../support/db.js';
import { runCommand } from '../../support/harness.js';
import { createSessionBehavior, initialSessionState, sessionKey, type SessionMsg, type SessionState } from '../../../actors/kinds/session/index.js';
import { projectSession } from '../../../storage/sessions/projection.js';
import { inSqlTransaction } from '../../../storage/sql-tx.js';

const behavior = createSessionBehavior();

for (const engine of dbEngines) {
  describe(`session terminal effects on ${engine.name}`, () => {
    let db: TestDb;
    const orgId = randomUUID();
    const projectId = randomUUID();
    before(async () => {
      db = await engine.open('sess_effects');
      await db.knex('orgs').insert({ id: orgId, name: 'Acme', slug: `acme-${orgId.slice(0, 8)}` });
    });
    after(() => db?.drop());

    /** Applies one message the way the runtime does: decide, then project in one transaction. */
    async function apply(id: string, state: SessionState, msg: SessionMsg, now: number): Promise<SessionState> {
      const result = runCommand(behavior, state, msg, { id, now });
      if (!result.ok) throw new Error(`${msg.type} refused: ${result.rejection.message}`);
      await inSqlTransaction(db.knex, (tx) => projectSession(tx, id, result.state, state, result.effects, now));
      return result.state;
    }

    function dispatchOf(tracker: string): SessionMsg {
      return {
        type: 'session.dispatch', orgId, projectId, trackerSessionId: tracker, prompt: 'Do it', agentCardId: null,
        trackerIssue: 'ENG-7', workType: null, provider: null, requestedBy: 'apiKey:k',
      };
    }

    it('runs each terminal effect once across a replayed projection, and promotes the waiting session', async () => {
      const a = sessionKey(randomUUID(), `a-${randomUUID()}`);
      const b = sessionKey(randomUUID(), `b-${randomUUID()}`);
      const t0 = Date.UTC(2025, 4, 1);
      let sa = await apply(a, initialSessionState(), { ...dispatchOf(`ta-${a}`) }, t0);
      const sb = await apply(b, initialSessionState(), { ...dispatchOf(`tb-${b}`) }, t0 + 1);
      const lockState = async (id: string) => (await db.knex('sessions').where({ id }).first('lock_state')).lock_state;
      expect(await lockState(a)).to.equal('held');
      expect(await lockState(b)).to.equal('waiting');

      sa = await apply(a, sa, { type: 'session.transition', orgId, projectIds: [projectId], status: 'claimed', workerId: 'w1' }, t0 + 2);
      sa = await apply(a, sa, { type: 'session.prompt', promptId: 'p-queued', prompt: 'more', requestedBy: 'u' }, t0 + 3);
      sa = await apply(a, sa, { type: 'session.transition', orgId, projectIds: [projectId], status: 'running', workerId: 'w1' }, t0 + 4);
      sa = await apply(a, sa, { type: 'session.transition', orgId, projectIds: [projectId], status: 'finalizing', workerId: 'w1', costUsd: 2.5 }, t0 + 5);
      const before = sa;
      const finish: SessionMsg = { type: 'session.transition', orgId, projectIds: [projectId], status: 'completed', workerId: 'w1', costUsd: 2.5 };
      const result = runCommand(behavior, before, finish, { id: a, now: t0 + 6 });
      if (!result.ok) throw new Error('completion refused');
      // The crash-and-replay case: the same projection committed twice.
      for (let i = 0; i < 2; i += 1) {
        await inSqlTransaction(db.knex, (tx) => projectSession(tx, a, result.state, before, result.effects, t0 + 6));
      }

      const quota = await db.knex('fleet_quota_usage').where({ org_id: orgId }).first();
      expect(quota.sessions).to.equal(1);
      expect(Number(quota.cost_usd)).to.equal(2.5);
      const activities = await db.knex('session_activities').where({ session_id: a });
      expect(activities.map((r: { kind: string }) => r.kind)).to.deep.equal(['session.completed']);
      const row = await db.knex('sessions').where({ id: a }).first();
      expect(row).to.include({ status: 'completed', worker_id: null, lock_state: 'none' });
      expect(Number(row.cost_usd)).to.equal(2.5);
      const inbox = await db.knex('session_prompts').where({ session_id: a }).whereNull('archived_at');
      expect(inbox).to.have.length(0);
      expect(await lockState(b)).to.equal('held');
      expect(sb.status).to.equal('pending');

      // A re-dispatch is a new run: it accounts again when it ends.
      let again = await apply(a, result.state, { type: 'session.prompt', promptId: 'p-again', prompt: 'again', requestedBy: 'u' }, t0 + 7);
      expect(await lockState(a)).to.equal('waiting');
      again = await apply(a, again, { type: 'session.stop', requestedBy: 'u' }, t0 + 8);
      const quotaAfter = await db.knex('fleet_quota_usage').where({ org_id: orgId }).first();
      expect(quotaAfter.sessions).to.equal(2);
      const stopActivity = await db.knex('session_activities').where({ session_id: a, kind: 'session.stopped' }).first();
      expect(stopActivity.body).to.equal('Stop signal received');
      expect(again.status).to.equal('stopped');
    });
  });
}
