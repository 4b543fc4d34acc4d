// Invariant: every analytics figure is computed from what the service recorded: phase records and router outcomes
// come from real session transitions, exactly once per run; seeded data sets give the figures the test computes
// independently; observation pages neither repeat nor skip rows when rows arrive between pages; platform aggregates
// publish a cell at exactly kAnonymityFloor orgs and withhold it one below, never change a published cell, and take
// no filters (analytics.platform.routes.test.ts); the graph projection is bounded, in the exact spec 2.5 shape, and
// laid out deterministically; the palette lists the org's own webhook and OAuth connections, never their secrets
// (analytics.projects.routes.test.ts); every route refuses anonymous callers, other orgs and hostile input with a
// 4xx, never a 5xx. Here: phase metrics and router performance, in one node because the router's arms are the ones
// the phase-metrics runs recorded.
import { expect } from 'chai';
import type { TestNode } from '../../support/node.js';
import { dispatch, registerDaemon, report, type Org } from '../sessions/support.js';
import { chooseArm } from '../../../actors/services/analytics/router.js';
import { sessionKeyOf } from '../../support/session-keys.js';
import { describeAnalytics, DAY } from './analytics-fixtures.js';

describeAnalytics((node) => {
  const { db } = node;
  let t: TestNode, acme: Org, globex: Org;
  before(() => ({ t, acme, globex } = node));

  describe('phase metrics', () => {
    it('turns the phases a worker reports into records, once per run, and into the figures of the route', async () => {
      const daemon = await registerDaemon(t, acme);
      const id = await dispatch(t, acme, { trackerIssue: 'ENG-7', provider: 'alpha' });
      const steps: [string, Record<string, unknown>][] = [
        ['claimed', {}], ['running', { phase: 'plan', costUsd: 0.1 }], ['running', { phase: 'implement', costUsd: 0.3 }],
        ['running', { phase: 'plan', costUsd: 0.4 }], ['finalizing', {}], ['completed', { costUsd: 0.5 }],
      ];
      for (const [status, extra] of steps) expect((await report(t, daemon, id, status, extra)).status).to.equal(200);
      // A report after the end is refused and records nothing more.
      expect((await report(t, daemon, id, 'completed', { costUsd: 0.9 })).status).to.equal(409);

      const key = await sessionKeyOf(db(), acme.orgId, id);
      const records = await db()('phase_records').where({ session_id: key }).orderBy('started_at');
      expect(records.map((r) => [r.phase, r.attempt, r.outcome])).to.deep.equal([
        ['plan', 1, 'advanced'], ['implement', 1, 'advanced'], ['plan', 2, 'completed'],
      ]);
      [0.2, 0.1, 0.1].forEach((cost, i) => expect(Number(records[i]!.cost_usd)).to.be.closeTo(cost, 1e-9));
      for (const r of records) expect(Number(r.cycle_time_ms)).to.equal(new Date(r.ended_at).getTime() - new Date(r.started_at).getTime());

      const res = await t.inject('GET', '/api/public/phase-metrics?timeRange=7d', { token: acme.apiKey });
      expect(res.status, res.text).to.equal(200);
      const plan = records.filter((r) => r.phase === 'plan');
      expect(res.json.phases.plan.totalRecords).to.equal(2);
      expect(res.json.phases.plan.avgAttempts).to.equal(2);
      expect(res.json.phases.plan.avgCostUsd).to.be.closeTo((0.2 + 0.1) / 2, 1e-6);
      expect(res.json.phases.plan.avgCycleTimeMs).to.be.closeTo(plan.reduce((s, r) => s + Number(r.cycle_time_ms), 0) / 2, 0.001);
      expect(res.json.phases.implement).to.include({ totalRecords: 1, avgAttempts: 1 });
      expect(res.json.phases.implement.avgCostUsd).to.be.closeTo(0.1, 1e-6);
      expect(res.json.reworkRate).to.be.closeTo(1 / 3, 1e-6);
      expect(res.json.escalationDistribution).to.deep.equal({ none: 0, rework: 1, failed: 0, stopped: 0 });
      expect(res.json.issueCount).to.equal(1);
      expect(res.json.timeRange).to.equal('7d');

      const outcomes = await db()('session_outcomes').where({ session_id: key });
      expect(outcomes).to.have.length(1);
      const arm = await db()('router_arms').where({ org_id: acme.orgId, provider: 'alpha', work_type: 'general' }).first();
      expect([Number(arm.alpha), Number(arm.beta), arm.samples]).to.deep.equal([2, 1, 1]);
    });

    it('matches figures computed independently from a seeded data set, per time range', async () => {
      const now = Date.now();
      type Seed = { session: string; issue: string | null; phase: string; attempt: number; ageDays: number; cycle: number; cost: number; outcome: string };
      const seeds: Seed[] = [
        { session: 's1', issue: 'A-1', phase: 'plan', attempt: 1, ageDays: 1, cycle: 1000, cost: 0.5, outcome: 'advanced' },
        { session: 's1', issue: 'A-1', phase: 'build', attempt: 1, ageDays: 1, cycle: 3000, cost: 1.5, outcome: 'completed' },
        { session: 's2', issue: 'A-1', phase: 'plan', attempt: 1, ageDays: 2, cycle: 2000, cost: 0.25, outcome: 'advanced' },
        { session: 's2', issue: 'A-1', phase: 'build', attempt: 1, ageDays: 2, cycle: 5000, cost: 2, outcome: 'advanced' },
        { session: 's2', issue: 'A-1', phase: 'plan', attempt: 2, ageDays: 2, cycle: 500, cost: 0.1, outcome: 'failed' },
        { session: 's3', issue: null, phase: 'plan', attempt: 1, ageDays: 20, cycle: 9000, cost: 3, outcome: 'stopped' },
        { session: 's4', issue: 'B-2', phase: 'review', attempt: 1, ageDays: 60, cycle: 100, cost: 0, outcome: 'completed' },
      ];
      const sid = (s: string): string => `${s}00000000000000`.slice(0, 16);
      await db()('phase_records').insert(seeds.map((s, i) => ({
        id: `${sid(s.session)}:1:${s.phase}:${s.attempt}`, org_id: globex.orgId, project_id: globex.projectId, session_id: sid(s.session), epoch: 1,
        tracker_issue: s.issue, phase: s.phase, attempt: s.attempt, cost_at_start: 0,
        started_at: new Date(now - s.ageDays * DAY + i), ended_at: new Date(now - s.ageDays * DAY + i + s.cycle), cycle_time_ms: s.cycle, cost_usd: s.cost, outcome: s.outcome,
      })));
      for (const [range, days] of [['7d', 7], ['30d', 30], ['90d', 90]] as const) {
        const inRange = seeds.filter((s) => s.ageDays < days);
        const expected: Record<string, unknown> = {};
        for (const phase of [...new Set(inRange.map((s) => s.phase))]) {
          const rs = inRange.filter((s) => s.phase === phase);
          expected[phase] = {
            totalRecords: rs.length,
            avgCycleTimeMs: Number((rs.reduce((a, s) => a + s.cycle, 0) / rs.length).toFixed(3)),
            avgCostUsd: Number((rs.reduce((a, s) => a + s.cost, 0) / rs.length).toFixed(6)),
            avgAttempts: Number((rs.length / new Set(rs.map((s) => s.session)).size).toFixed(6)),
          };
        }
        const runs = [...new Set(inRange.map((s) => s.session))].map((session) => {
          const rs = inRange.filter((s) => s.session === session);
          const final = rs.map((s) => s.outcome).find((o) => ['completed', 'failed', 'stopped'].includes(o));
          return { final, rework: rs.some((s) => s.attempt > 1) };
        }).filter((r) => r.final !== undefined);
        const share = (pred: (r: { final?: string; rework: boolean }) => boolean): number => Number((runs.filter(pred).length / runs.length).toFixed(6));
        const res = await t.inject('GET', `/api/public/phase-metrics?timeRange=${range}`, { token: globex.ownerToken });
        expect(res.status, res.text).to.equal(200);
        expect(res.json.phases, range).to.deep.equal(expected);
        expect(res.json.reworkRate).to.equal(Number((inRange.filter((s) => s.attempt > 1).length / inRange.length).toFixed(6)));
        expect(res.json.issueCount).to.equal(new Set(inRange.map((s) => s.issue ?? s.session)).size);
        expect(res.json.escalationDistribution).to.deep.equal({
          none: share((r) => r.final === 'completed' && !r.rework), rework: share((r) => r.final === 'completed' && r.rework),
          failed: share((r) => r.final === 'failed'), stopped: share((r) => r.final === 'stopped'),
        });
      }
      // The default range is 30d; and another org's records never show.
      const def = await t.inject('GET', '/api/public/phase-metrics', { token: globex.apiKey });
      expect(def.json.timeRange).to.equal('30d');
      expect(def.json.phases).to.not.have.property('implement');
    });

    it('refuses anonymous callers and a worker token, and bad ranges with 400', async () => {
      const daemon = await registerDaemon(t, acme, 'host-pm');
      expect((await t.inject('GET', '/api/public/phase-metrics')).status).to.equal(401);
      expect((await t.inject('GET', '/api/public/phase-metrics', { token: daemon.runtimeJwt })).status).to.equal(403);
      for (const q of ['timeRange=1y', 'timeRange=', 'other=1', 'timeRange=%00']) {
        expect((await t.inject('GET', `/api/public/phase-metrics?${q}`, { token: acme.apiKey })).status, q).to.equal(400);
      }
    });
  });

  describe('router performance', () => {
    it('routes a dispatch without a provider by Thompson sampling seeded with the request id, and records the arm', async () => {
      const daemon = await registerDaemon(t, acme, 'host-router');
      const failed = await dispatch(t, acme, { provider: 'beta' });
      for (const s of ['claimed', 'running', 'finalizing', 'failed']) expect((await report(t, daemon, failed, s)).status).to.equal(200);
      const arms = (await db()('router_arms').where({ org_id: acme.orgId, work_type: 'general' }))
        .map((r) => ({ provider: r.provider as string, workType: 'general', alpha: Number(r.alpha), beta: Number(r.beta) }));
      expect(arms.map((a) => a.provider).sort()).to.deep.equal(['alpha', 'beta']);
      const expected = chooseArm('general', arms, 'route-seed-0001')!.provider;
      const chosen: string[] = [];
      for (let i = 0; i < 2; i++) {
        const res = await t.inject('POST', '/api/agent-dispatch', {
          token: acme.apiKey, headers: { 'x-request-id': 'route-seed-0001' }, body: { projectId: acme.projectId, prompt: 'route me' },
        });
        expect(res.status, res.text).to.equal(201);
        const key = await sessionKeyOf(db(), acme.orgId, res.json.sessionId);
        const row = await db()('sessions').where({ id: key }).first('provider');
        const decision = await db()('router_decisions').where({ session_id: key }).first();
        expect(decision.provider).to.equal(row.provider);
        expect(decision.request_id).to.equal('route-seed-0001');
        chosen.push(row.provider);
      }
      expect(chosen).to.deep.equal([expected, expected]);
    });

    it('serves arms, health and observations; pages neither repeat nor skip rows inserted between pages', async () => {
      const base = Date.now() - 3 * DAY;
      const seeded = Array.from({ length: 27 }, (_, i) => ({
        id: `seed-${String(i).padStart(3, '0')}`, org_id: globex.orgId, session_id: `${String(i).padStart(16, '0')}`, provider: 'p',
        work_type: 'general', status: i % 3 === 0 ? 'failed' : 'completed', success: i % 3 !== 0, cost_usd: i, duration_ms: 10 * i,
        // Pairs share a timestamp, so the id half of the key decides their order.
        created_at: new Date(base + Math.floor(i / 2) * 1000),
      }));
      await db()('session_outcomes').insert(seeded);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await t.inject('GET', `/api/router/performance?limit=10${cursor ? `&cursor=${cursor}` : ''}`, { token: globex.apiKey });
        expect(res.status, res.text).to.equal(200);
        seen.push(...res.json.observations.map((o: { id: string }) => o.id));
        cursor = res.json.nextCursor;
        // Newer rows arrive while the client pages.
        await db()('session_outcomes').insert({
          ...seeded[0]!, id: `late-${pages}`, session_id: `late${pages}`.padEnd(16, '0'), created_at: new Date(),
        });
        pages++;
      } while (cursor !== null);
      const expectedOrder = [...seeded].sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : -1)).map((s) => s.id);
      expect(seen).to.deep.equal(expectedOrder);
      expect(pages).to.equal(3);

      const acmeView = await t.inject('GET', '/api/router/performance', { token: acme.ownerToken });
      expect(acmeView.json.observations.map((o: { id: string }) => o.id).some((id: string) => id.startsWith('seed-'))).to.equal(false);
      const alpha = acmeView.json.arms.find((a: { provider: string }) => a.provider === 'alpha');
      expect(alpha).to.deep.include({ workType: 'general', alpha: 2, beta: 1, samples: 1 });
      expect(alpha.mean).to.be.closeTo(2 / 3, 1e-9);
      expect(acmeView.json.health).to.include({ status: 'healthy', arms: 2, coldArms: 2, observations24h: 2, successRate24h: 0.5 });
      expect(acmeView.json.health.routedDispatches24h).to.equal(2);
    });

    it('answers 400 for forged cursors and bad limits, 401 anonymous, never 5xx', async () => {
      expect((await t.inject('GET', '/api/router/performance')).status).to.equal(401);
      const forged = Buffer.from(JSON.stringify(['not a date', 'x'])).toString('base64url');
      for (const q of [`cursor=${forged}`, 'cursor=%27%3Bdrop', 'cursor=AAAA', 'limit=-1', 'limit=abc', 'limit=99999', `cursor=${'A'.repeat(600)}`]) {
        const res = await t.inject('GET', `/api/router/performance?${q}`, { token: acme.apiKey });
        expect(res.status, q).to.equal(400);
      }
    });
  });
});
