// Invariant (issue 20, races as properties): whatever mix of commands arrives at once at the real actors through the
// HTTP interface, a session reaches one terminal state (its terminal side effect, the org's quota count, once), a
// mutation is cancelled or delivered and never both, a workflow's versions stay gap-free under concurrent PATCHes
// and rollbacks, and an approval gate is decided once. fast-check generates the command mixes and shrinks a failure.
import { expect } from 'chai';
import fc from 'fast-check';
import { startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, type Daemon, type Org } from '../sessions/support.js';
import { sessionKeyOf } from '../../support/session-keys.js';

/** Runs per property; RACE_RUNS raises it for a longer search. */
const runs = Number(process.env.RACE_RUNS ?? 25);
const terminal = new Set(['completed', 'failed', 'stopped']);

describe('races as properties against the real actors (embedded engines)', function () {
  this.timeout(600_000);
  let t: TestNode;
  let org: Org;
  let daemons: Daemon[];
  before(async () => {
    t = await startTestNode({ engines: 'embedded', config: { rateLimitWritesPerMinute: 10_000_000, rateLimitDispatchesPerMinute: 10_000_000 } });
    org = await provisionOrg(t, 'Races');
    daemons = [await registerDaemon(t, org, 'race-1'), await registerDaemon(t, org, 'race-2')];
  });
  after(async () => { await t?.close(); });

  type SessionCommand = { kind: 'stop' } | { kind: 'report'; worker: 0 | 1; status: 'claimed' | 'running' | 'finalizing' | 'completed' | 'failed' | 'stopped' };
  const sessionCommand: fc.Arbitrary<SessionCommand> = fc.oneof(
    fc.constant({ kind: 'stop' } as const),
    fc.record({
      kind: fc.constant('report' as const),
      worker: fc.constantFrom(0 as const, 1 as const),
      status: fc.constantFrom('claimed' as const, 'running' as const, 'finalizing' as const, 'completed' as const, 'failed' as const, 'stopped' as const),
    }),
  );

  it('one terminal state per session, and its side effect once', async () => {
    const quota = async () => Number((await t.node.deps.db('fleet_quota_usage').where({ org_id: org.orgId }).sum({ n: 'sessions' }))[0]?.n ?? 0);
    await fc.assert(fc.asyncProperty(fc.array(sessionCommand, { minLength: 2, maxLength: 16 }), async (commands) => {
      const id = await dispatch(t, org);
      const quotaBefore = await quota();
      // A claim first, by worker 0, so reports of either worker have something to race over.
      await t.call('POST', `/api/sessions/${id}/status`, { token: daemons[0]!.runtimeJwt, body: { status: 'claimed', workerId: daemons[0]!.workerId } });
      const replies = await Promise.all(commands.map((c) => c.kind === 'stop'
        ? t.call('POST', `/api/public/sessions/${id}/stop`, { token: org.apiKey })
        : t.call('POST', `/api/sessions/${id}/status`, { token: daemons[c.worker]!.runtimeJwt, body: { status: c.status, workerId: daemons[c.worker]!.workerId } })));
      for (const r of replies) expect(r.status, r.text).to.be.oneOf([200, 409]);
      const endedBy = replies.filter((r) => r.status === 200 && terminal.has(r.json.newStatus) && r.json.previousStatus !== r.json.newStatus && r.json.stopped !== false);
      const key = await sessionKeyOf(t.node.deps.db, org.orgId, id);
      const moves = await t.node.deps.db('session_transitions').where({ session_id: key }).whereIn('to_status', [...terminal]);
      const row = await t.node.deps.db('sessions').where({ id: key }).first('status');
      expect(moves.length, 'at most one terminal transition').to.be.at.most(1);
      expect(endedBy.length, 'at most one caller heard that it ended the session').to.be.at.most(1);
      if (moves.length === 1) {
        expect(row.status).to.equal(moves[0].to_status);
        expect(endedBy.map((r) => r.json.newStatus)).to.deep.equal([moves[0].to_status]);
      }
      expect(await quota() - quotaBefore, 'the terminal side effect ran once per ended session').to.equal(moves.length);
    }), { numRuns: runs });
  });

  it('a mutation is cancelled or delivered, never both', async () => {
    const host = daemons[1]!;
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 6 }), fc.array(fc.constantFrom('cancel' as const, 'heartbeat' as const), { minLength: 1, maxLength: 14 }),
      async (count, actions) => {
        const ids: string[] = [];
        for (let i = 0; i < count; i++) {
          const res = await t.call('POST', '/api/daemon/mutations', { token: org.apiKey, body: { workerHostId: host.workerId, op: 'pool.deleted', params: { poolId: `p${i}` } } });
          expect(res.status, res.text).to.equal(201);
          ids.push(res.json.mutation.id);
        }
        const cancelled = new Set<string>();
        const delivered = new Map<string, number>();
        await Promise.all(actions.map(async (action, i) => {
          if (action === 'cancel') {
            const id = ids[i % ids.length]!;
            const res = await t.call('POST', `/api/daemon/mutations/${id}/cancel`, { token: org.apiKey });
            expect(res.status, res.text).to.be.oneOf([200, 409]);
            if (res.status === 200) cancelled.add(id);
          } else {
            const res = await t.call('POST', '/api/daemon/heartbeat', { token: host.runtimeJwt, body: { workerId: host.workerId } });
            expect(res.status, res.text).to.equal(200);
            for (const m of res.json.mutations) delivered.set(m.id, (delivered.get(m.id) ?? 0) + 1);
          }
        }));
        // Whatever is still pending goes out now, so every mutation ends delivered or cancelled.
        const last = await t.call('POST', '/api/daemon/heartbeat', { token: host.runtimeJwt, body: { workerId: host.workerId } });
        for (const m of last.json.mutations) delivered.set(m.id, (delivered.get(m.id) ?? 0) + 1);
        const rows = await t.node.deps.db('daemon_mutations').whereIn('id', ids).select('id', 'status');
        for (const { id, status } of rows as { id: string; status: string }[]) {
          expect(cancelled.has(id) && delivered.has(id), `mutation ${id} cancelled and delivered`).to.equal(false);
          expect(delivered.get(id) ?? 0, 'delivered at most once').to.be.at.most(1);
          expect(status).to.equal(cancelled.has(id) ? 'cancelled' : 'delivered');
        }
      }), { numRuns: runs });
  });

  it('workflow versions stay gap-free under concurrent PATCHes and rollbacks', async () => {
    const yaml = 'schemaVersion: v2\nname: race\ntrigger: {type: manual}\nnodes:\n  - {id: plan, kind: agent, prompt: "Plan"}\nedges: []\n';
    await fc.assert(fc.asyncProperty(
      fc.array(fc.oneof(fc.constant({ kind: 'patch' as const }), fc.record({ kind: fc.constant('rollback' as const), to: fc.integer({ min: 1, max: 4 }) })), { minLength: 1, maxLength: 12 }),
      async (commands) => {
        const created = await t.call('POST', `/api/projects/${org.projectId}/workflows`, { token: org.ownerToken, body: { name: 'race', definitionYaml: yaml } });
        expect(created.status, created.text).to.equal(201);
        const id = created.json.id as string;
        const replies = await Promise.all(commands.map((c, i) => c.kind === 'patch'
          ? t.call('PATCH', `/api/workflows/${id}`, { token: org.ownerToken, body: { viewport: { x: i, y: 0, zoom: 1 }, changeReason: `edit ${i}` } })
          : t.call('POST', `/api/workflows/${id}/versions/${c.to}/rollback`, { token: org.ownerToken })));
        for (const r of replies) expect(r.status, r.text).to.be.oneOf([200, 201, 404]);
        const made = replies.filter((r) => r.status < 300).map((r) => r.json.version as number);
        const versions = ((await t.call('GET', `/api/workflows/${id}/versions`, { token: org.ownerToken })).json as { version: number }[]).map((v) => v.version).sort((a, b) => a - b);
        expect(versions, 'versions are 1..n').to.deep.equal(Array.from({ length: versions.length }, (_, i) => i + 1));
        expect(versions.length).to.equal(1 + made.length);
        expect(new Set(made).size, 'no two changes got one version').to.equal(made.length);
      }), { numRuns: runs });
  });

  it('an approval gate is decided once', async () => {
    const deciders = await Promise.all([1, 2, 3].map(async (i) => {
      const res = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email: `approver-${i}-${Date.now()}@races.test`, role: 'admin' } });
      return res.json.userToken as string;
    }));
    await fc.assert(fc.asyncProperty(
      fc.array(fc.record({ who: fc.integer({ min: 0, max: 2 }), decision: fc.constantFrom('approved', 'rejected') }), { minLength: 2, maxLength: 8 }),
      async (decisions) => {
        const gate = await t.call('POST', '/api/approval-gates', { token: org.ownerToken, body: { projectId: org.projectId, title: 'race' } });
        expect(gate.status, gate.text).to.equal(201);
        const id = gate.json.gate.id as string;
        const replies = await Promise.all(decisions.map((d) => t.call('POST', `/api/approval-gates/${id}/decide`, { token: deciders[d.who]!, body: { decision: d.decision } })));
        for (const r of replies) expect(r.status, r.text).to.be.oneOf([200, 409]);
        const won = replies.filter((r) => r.status === 200);
        expect(won, 'exactly one decision wins').to.have.length(1);
        const stored = await t.node.deps.db('approval_gates').where({ id }).first('status');
        expect(stored.status).to.equal(won[0]!.json.gate.status);
      }), { numRuns: runs });
  });
});
