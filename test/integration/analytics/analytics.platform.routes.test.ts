// Invariant (analytics.routes.test.ts, platform and operator views): platform aggregates publish a cell at exactly
// kAnonymityFloor orgs and withhold it one below, never change a published cell, and take no filters; the operator's
// session list shows the org's own sessions of one status; both refuse anonymous callers.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../../support/node.js';
import { dispatch, registerDaemon, report, type Org } from '../sessions/support.js';
import { weekStart } from '../../../storage/analytics/aggregates.js';
import { describeAnalytics, DAY, FLOOR } from './analytics-fixtures.js';

describeAnalytics((node) => {
  const { db } = node;
  let t: TestNode, acme: Org, globex: Org;
  before(() => ({ t, acme, globex } = node));

  describe('platform aggregates', () => {
    const outcome = (org: string, at: number, status: string, cost: number, duration: number | null) => ({
      id: randomUUID(), org_id: org, session_id: randomUUID().replace(/-/g, '').slice(0, 16), provider: 'secret-provider-name',
      work_type: 'org-specific-work', status, success: status === 'completed', cost_usd: cost, duration_ms: duration, created_at: new Date(at),
    });

    it('publishes a cell built from exactly the floor of orgs, withholds one below it, and never changes a published cell', async () => {
      // Cells are platform-wide, so this test needs a complete week no other test writes to: the router suite seeds
      // outcomes a few days back, which is last week on some weekdays. Six weeks back is inside the 12 published.
      const checkedWeek = weekStart(Date.now()) - 6 * 7 * DAY + DAY;
      const weekRows = await db()('session_outcomes')
        .where('created_at', '>=', new Date(checkedWeek - DAY)).where('created_at', '<', new Date(checkedWeek + 6 * DAY)).count('* as n').first();
      expect(weekRows, 'another test wrote outcomes into the week this one checks').to.deep.equal({ n: 0 });
      const orgs = Array.from({ length: FLOOR }, () => randomUUID());
      const atFloor = orgs.map((o, i) => outcome(o, checkedWeek + i * 1000, 'completed', 1 + i, 1000 * (i + 1)));
      const belowFloor = orgs.slice(0, FLOOR - 1).map((o, i) => outcome(o, checkedWeek + i, 'failed', 9, 5));
      await db()('session_outcomes').insert([...atFloor, ...belowFloor, outcome(orgs[0]!, checkedWeek + 5000, 'completed', 4, null)]);

      const first = await t.inject('GET', '/api/platform/aggregates', { token: globex.apiKey });
      expect(first.status, first.text).to.equal(200);
      const week = new Date(weekStart(checkedWeek)).toISOString().slice(0, 10);
      const completed = first.json.rows.find((r: { weekStart: string; outcome: string }) => r.weekStart === week && r.outcome === 'completed');
      const costs = [...atFloor.map((o) => o.cost_usd), 4];
      expect(completed).to.deep.equal({
        weekStart: week, outcome: 'completed', sessions: 4,
        avgCostUsd: Number((costs.reduce((a, b) => a + b, 0) / 4).toFixed(6)),
        avgDurationMs: Math.round(atFloor.reduce((a, o) => a + o.duration_ms!, 0) / atFloor.length),
      });
      expect(first.json.rows.find((r: { weekStart: string; outcome: string }) => r.weekStart === week && r.outcome === 'failed')).to.equal(undefined);
      expect(first.json.suppressedRows).to.be.at.least(1);
      expect(first.json.kAnonymityFloor).to.equal(FLOOR);
      expect(first.text).to.not.match(/secret-provider-name|org-specific-work/);
      for (const o of orgs) expect(first.text).to.not.contain(o);

      // Differencing: new runs (this week, any number of orgs) change no published cell and publish no partial week.
      await db()('session_outcomes').insert(orgs.map((o) => outcome(o, Date.now(), 'failed', 100, 1)));
      const second = await t.inject('GET', '/api/platform/aggregates', { token: acme.apiKey });
      expect(second.json.rows).to.deep.equal(first.json.rows);
      expect(second.json.rows.every((r: { weekStart: string }) => r.weekStart < new Date(weekStart(Date.now())).toISOString().slice(0, 10))).to.equal(true);
    });

    it('takes no filters at all and refuses anonymous callers', async () => {
      expect((await t.inject('GET', '/api/platform/aggregates')).status).to.equal(401);
      for (const q of ['orgId=x', 'week=2024-01-01', 'outcome=failed']) {
        expect((await t.inject('GET', `/api/platform/aggregates?${q}`, { token: acme.apiKey })).status, q).to.equal(400);
      }
    });
  });

  describe('operator session list', () => {
    it('lists the org\'s sessions of one status and refuses bad statuses', async () => {
      const daemon = await registerDaemon(t, globex, 'ops-host');
      const id = await dispatch(t, globex);
      for (const s of ['claimed', 'running']) await report(t, daemon, id, s, { phase: 'plan' });
      const res = await t.inject('GET', '/api/fleet/sessions?status=running', { token: globex.apiKey });
      expect(res.status, res.text).to.equal(200);
      expect(res.json.sessions.map((s: { id: string }) => s.id)).to.include(id);
      expect(res.json.sessions.every((s: { status: string }) => s.status === 'running')).to.equal(true);
      expect((await t.inject('GET', '/api/fleet/sessions?status=running', { token: acme.apiKey })).json.sessions.map((s: { id: string }) => s.id)).to.not.include(id);
      expect((await t.inject('GET', '/api/fleet/sessions?status=bogus', { token: acme.apiKey })).status).to.equal(400);
      expect((await t.inject('GET', '/api/fleet/sessions')).status).to.equal(401);
    });
  });
});
