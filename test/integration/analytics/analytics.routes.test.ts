// Invariant: every analytics figure is computed from what the service recorded: phase records and router outcomes
// come from real session transitions, exactly once per run; seeded data sets give the figures the test computes
// independently; observation pages neither repeat nor skip rows when rows arrive between pages; platform aggregates
// publish a cell at exactly kAnonymityFloor orgs and withhold it one below, never change a published cell, and take
// no filters; the graph projection is bounded, in the exact spec 2.5 shape, and laid out deterministically; the
// palette lists the org's own webhook and OAuth connections, never their secrets; every
// route refuses anonymous callers, other orgs and hostile input with a 4xx, never a 5xx.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, report, type Org } from '../sessions/support.js';
import { chooseArm } from '../../../actors/analytics/router.js';
import { weekStart } from '../../../storage/analytics/aggregates.js';
import { insertProject } from '../../../storage/identity/orgs.js';
import { upsertOptionSnapshots } from '../../../storage/plugins/option-snapshots.js';
import { upsertProviderIntegration } from '../../../storage/integrations/provider-integrations.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';
import { connectionSealContext } from '../../../actors/integrations/oauth/index.js';
import { sessionKeyOf } from '../../support/session-keys.js';

const DAY = 86_400_000;
const FLOOR = 3;

for (const { set, skip } of engineSets) describe(`analytics routes (${set} engines)`, function () {
  if (skip) return;
  this.timeout(120_000);
  let t: TestNode;
  let acme: Org;
  let globex: Org;
  const db = () => t.node.deps.db;

  before(async () => {
    t = await startTestNode({ engines: set, config: { kAnonymityFloor: FLOOR } });
    acme = await provisionOrg(t, 'Acme');
    globex = await provisionOrg(t, 'Globex');
  });
  after(() => t?.close());

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

  describe('knowledge graph', () => {
    const graphOf = (org: Org, q = '') => t.inject('GET', `/api/projects/${org.projectId}/graph${q}`, { token: org.ownerToken });
    const write = (org: Org, body: unknown, token = org.apiKey) => t.inject('POST', `/api/projects/${org.projectId}/graph/entities`, { token, body });

    it('records entities, relationships and recalls and projects them in the exact spec 2.5 shape', async () => {
      const daemon = await registerDaemon(t, globex, 'host-graph');
      const session = await dispatch(t, globex);
      const body = {
        sessionId: session,
        entities: [
          { type: 'service', name: 'billing', description: 'Charges cards', properties: { lang: 'go' }, importanceWeight: 5, feedbackWeight: 1 },
          { type: 'service', name: 'ledger', importanceWeight: 3 },
          { type: 'person', name: 'Ada' },
        ],
        relationships: [
          { source: { type: 'service', name: 'billing' }, target: { type: 'service', name: 'ledger' }, relationshipName: 'writes_to' },
          { source: { type: 'person', name: 'Ada' }, target: { type: 'service', name: 'billing' }, relationshipName: 'owns' },
        ],
      };
      const res = await write(globex, body, daemon.runtimeJwt);
      expect(res.status, res.text).to.equal(200);
      expect(res.json).to.deep.equal({ entities: 3, relationships: 2, recalls: 3 });
      // Same session again: no new recall; the relationship is reinforced, not duplicated.
      expect((await write(globex, body)).json.recalls).to.equal(0);

      const g = await graphOf(globex);
      expect(g.status, g.text).to.equal(200);
      expect(Object.keys(g.json).sort()).to.deep.equal(['edges', 'edgesTruncated', 'nodes', 'truncated', 'window']);
      expect(g.json.window).to.deep.equal({ days: 30 });
      expect(g.json.truncated).to.equal(false);
      expect(g.json.nodes.map((n: { name: string }) => n.name)).to.deep.equal(['billing', 'ledger', 'Ada']);
      const billing = g.json.nodes[0];
      expect(Object.keys(billing).sort()).to.deep.equal(['createdAt', 'description', 'feedbackWeight', 'id', 'importanceWeight', 'name', 'position', 'properties', 'recall', 'type']);
      expect(billing).to.deep.include({ type: 'service', description: 'Charges cards', importanceWeight: 5, feedbackWeight: 1, properties: { lang: 'go' } });
      expect(billing.recall.sessions).to.equal(1);
      expect(Date.parse(billing.recall.lastRecalled)).to.be.a('number').and.not.NaN;
      expect(g.json.edges).to.have.length(2);
      for (const e of g.json.edges) expect(Object.keys(e).sort()).to.deep.equal(['id', 'relationshipName', 'source', 'target']);
      expect(await db()('graph_relationships').where({ project_id: globex.projectId }).max('weight as w').first()).to.deep.equal({ w: 2 });

      // Deterministic layout: the same call twice, and the same graph recorded in another order in another project.
      expect((await graphOf(globex)).json.nodes.map((n: { position: unknown }) => n.position)).to.deep.equal(g.json.nodes.map((n: { position: unknown }) => n.position));
      const reversed = { entities: [...body.entities].reverse(), relationships: [...body.relationships].reverse() };
      expect((await write(acme, reversed)).status).to.equal(200);
      const mirror = await graphOf(acme);
      const positions = (nodes: { type: string; name: string; position: unknown }[]) =>
        Object.fromEntries(nodes.map((n) => [`${n.type}/${n.name}`, n.position]));
      expect(positions(mirror.json.nodes)).to.deep.equal(positions(g.json.nodes));
    });

    it('bounds the projection: freshness window, top-N nodes by importance, top-N edges, with truncation flags', async () => {
      const org = await provisionOrg(t, 'Initech');
      const entities = Array.from({ length: 205 }, (_, i) => ({ type: 'file', name: `f${i}`, importanceWeight: i }));
      for (let i = 0; i < entities.length; i += 100) expect((await write(org, { entities: entities.slice(i, i + 100) })).status).to.equal(200);
      const links: { source: { type: string; name: string }; target: { type: string; name: string }; relationshipName: string }[] = [];
      for (let i = 5; i < 205; i++) for (const d of [1, 2, 3]) if (i + d < 205) links.push({ source: { type: 'file', name: `f${i}` }, target: { type: 'file', name: `f${i + d}` }, relationshipName: 'imports' });
      for (let i = 0; i < links.length; i += 200) {
        const res = await write(org, { entities: [], relationships: links.slice(i, i + 200) });
        expect(res.status, res.text).to.equal(200);
      }
      const g = await graphOf(org);
      expect(g.json.nodes).to.have.length(200);
      expect(g.json.truncated).to.equal(true);
      expect(g.json.nodes.map((n: { name: string }) => n.name)).to.not.include.members(['f0', 'f4']);
      expect(g.json.edges).to.have.length(500);
      expect(links.length).to.be.greaterThan(500);
      expect(g.json.edgesTruncated).to.equal(true);

      // Age f204 and its edges beyond 30 days: gone from the default window, back with window=all.
      const old = new Date(Date.now() - 40 * DAY + 3_600_000);
      await db()('graph_entities').where({ project_id: org.projectId, name: 'f204' }).update({ updated_at: old, created_at: old });
      const fresh = await graphOf(org);
      expect(fresh.json.nodes.map((n: { name: string }) => n.name)).to.not.include('f204');
      const all = await graphOf(org, '?window=all');
      expect(all.json.nodes.map((n: { name: string }) => n.name)).to.include('f204');
      expect(all.json.window.days).to.equal(40);
      expect((await graphOf(org, '?window=7')).json.window).to.deep.equal({ days: 7 });
    });

    it("refuses another org's project (404), anonymous callers (401), unknown relationship ends and hostile input (400)", async () => {
      expect((await t.inject('GET', `/api/projects/${globex.projectId}/graph`, { token: acme.apiKey })).status).to.equal(404);
      expect((await t.inject('GET', `/api/projects/${randomUUID()}/graph`, { token: acme.apiKey })).status).to.equal(404);
      expect((await t.inject('GET', '/api/projects/not-a-uuid/graph', { token: acme.apiKey })).status).to.equal(404);
      expect((await t.inject('POST', `/api/projects/${globex.projectId}/graph/entities`, { token: acme.apiKey, body: { entities: [] } })).status).to.equal(404);
      expect((await t.inject('GET', `/api/projects/${acme.projectId}/graph`)).status).to.equal(401);
      expect((await t.inject('POST', `/api/projects/${acme.projectId}/graph/entities`, { body: { entities: [] } })).status).to.equal(401);
      const otherSession = await dispatch(t, globex);
      expect((await write(acme, { sessionId: otherSession, entities: [] })).status).to.equal(404);
      const dangling = await write(acme, { entities: [], relationships: [{ source: { type: 'x', name: 'nope' }, target: { type: 'x', name: 'nope2' }, relationshipName: 'r' }] });
      expect(dangling.status).to.equal(400);
      for (const q of ['?window=0', '?window=-5', '?window=abc', '?window=99999', '?window=all&x=1']) {
        expect((await graphOf(acme, q)).status, q).to.equal(400);
      }
      for (const body of [{}, { entities: 'x' }, { entities: [{ type: '', name: 'a' }] }, { entities: [{ type: 'a', name: 'b', importanceWeight: 'big' }] },
        { entities: Array.from({ length: 101 }, (_, i) => ({ type: 't', name: `${i}` })) }, { entities: [], sessionId: '../../x' }]) {
        expect((await write(acme, body)).status, JSON.stringify(body).slice(0, 60)).to.equal(400);
      }
    });
  });

  describe('resource palette', () => {
    it('groups connected integrations, plugin verbs and workers by kind, with an optional kind filter', async () => {
      const daemon = await registerDaemon(t, acme, 'palette-host');
      const now = Date.now();
      await upsertProviderIntegration(db(), { orgId: acme.orgId, provider: 'github', sealedSecret: 'sealed', projectId: null, updatedBy: 'test', at: new Date(now) });
      await upsertProviderIntegration(db(), { orgId: acme.orgId, provider: 'linear', sealedSecret: 'sealed', projectId: randomUUID(), updatedBy: 'test', at: new Date(now) });
      await upsertOptionSnapshots(db(), { orgId: acme.orgId, projectId: acme.projectId, updatedBy: 'test', at: now }, [{ pluginId: 'jira', verbId: 'create-issue', options: { project: ['ENG'] } }]);
      const res = await t.inject('GET', `/api/projects/${acme.projectId}/palette`, { token: acme.memberToken });
      expect(res.status, res.text).to.equal(200);
      const groups = res.json.groups;
      expect(Object.keys(groups).sort()).to.deep.equal(['ci', 'errors', 'hosting', 'incident', 'plugin', 'repo', 'tracker', 'worker']);
      expect(groups.repo).to.have.length(1);
      expect(groups.repo[0]).to.include({ id: 'integration:github', kind: 'repo', provider: 'github', scope: 'org' });
      // The Linear connection is bound to another project.
      expect(groups.tracker).to.deep.equal([]);
      expect(groups.plugin[0]).to.deep.include({ kind: 'plugin', provider: 'jira', name: 'create-issue', options: { project: ['ENG'] } });
      expect(groups.worker.map((w: { id: string }) => w.id)).to.include(daemon.workerId);
      const onlyRepo = await t.inject('GET', `/api/projects/${acme.projectId}/palette?kind=repo`, { token: daemon.runtimeJwt });
      expect(onlyRepo.status).to.equal(200);
      expect(Object.keys(onlyRepo.json.groups)).to.deep.equal(['repo']);
      expect((await t.inject('GET', `/api/projects/${acme.projectId}/palette?kind=bogus`, { token: acme.apiKey })).status).to.equal(400);
    });

    it('lists the OAuth-connected providers of the caller\'s org next to the webhook ones, without their tokens', async () => {
      const connect = (orgId: string, provider: string, accessToken: string) => upsertOAuthConnection(db(), {
        orgId, provider, scope: 'read', expiresAt: null, connectedBy: randomUUID(), at: new Date(),
        sealedTokens: t.node.deps.secrets.seal(JSON.stringify({ access_token: accessToken }), connectionSealContext(orgId, provider)),
      });
      await upsertProviderIntegration(db(), { orgId: globex.orgId, provider: 'github', sealedSecret: 'sealed', projectId: null, updatedBy: 'test', at: new Date() });
      await connect(globex.orgId, 'github', 'gho_globex_secret_token');
      await connect(globex.orgId, 'sentry', 'sntrys_globex_secret_token');
      const res = await t.inject('GET', `/api/projects/${globex.projectId}/palette`, { token: globex.memberToken });
      expect(res.status, res.text).to.equal(200);
      expect(res.text).to.not.include('secret_token');
      expect(res.text).to.not.include('sealed');
      const { repo, errors, tracker } = res.json.groups;
      expect(repo.map((e: { id: string; connection: string }) => [e.id, e.connection])).to.deep.equal([['integration:github', 'webhook'], ['oauth:github', 'oauth']]);
      expect(errors).to.have.length(1);
      expect(errors[0]).to.include({ id: 'oauth:sentry', kind: 'errors', provider: 'sentry', name: 'Sentry', scope: 'org', connection: 'oauth', grantedScope: 'read' });
      expect(tracker).to.deep.equal([]);
      expect(Object.keys(errors[0]).sort()).to.deep.equal(['connectedAt', 'connection', 'expiresAt', 'grantedScope', 'id', 'kind', 'name', 'provider', 'scope', 'status', 'statusChangedAt']);
      expect(errors[0]).to.include({ status: 'connected', statusChangedAt: null });
      const onlyErrors = await t.inject('GET', `/api/projects/${globex.projectId}/palette?kind=errors`, { token: globex.apiKey });
      expect(Object.keys(onlyErrors.json.groups)).to.deep.equal(['errors']);
      // Another org's connections are not in this org's palette.
      const acmePalette = await t.inject('GET', `/api/projects/${acme.projectId}/palette`, { token: acme.memberToken });
      expect(acmePalette.json.groups.errors).to.deep.equal([]);
      expect(acmePalette.json.groups.repo.map((e: { id: string }) => e.id)).to.not.include('oauth:github');
    });

    it('answers 403 without project-viewer access (another project of the org, another org, an unknown project), 401 anonymous', async () => {
      const daemon = await registerDaemon(t, acme, 'palette-host-2');
      const second = randomUUID();
      await insertProject(db(), { id: second, orgId: acme.orgId, name: 'Second', slug: `second-${second.slice(0, 8)}` });
      expect((await t.inject('GET', `/api/projects/${second}/palette`, { token: daemon.runtimeJwt })).status).to.equal(403);
      expect((await t.inject('GET', `/api/projects/${second}/palette`, { token: acme.memberToken })).status).to.equal(200);
      expect((await t.inject('GET', `/api/projects/${globex.projectId}/palette`, { token: acme.apiKey })).status).to.equal(403);
      expect((await t.inject('GET', `/api/projects/${randomUUID()}/palette`, { token: acme.apiKey })).status).to.equal(403);
      expect((await t.inject('GET', `/api/projects/${acme.projectId}/palette`)).status).to.equal(401);
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
