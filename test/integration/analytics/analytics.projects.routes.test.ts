// Invariant (analytics.routes.test.ts, a project's analytics): the graph projection is bounded, in the exact spec 2.5
// shape, and laid out deterministically; the palette lists the org's own integrations, plugin verbs, workers and OAuth
// connections, never their secrets; both refuse anonymous callers, other orgs and hostile input with a 4xx.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { TestNode } from '../../support/node.js';
import { dispatch, provisionOrg, registerDaemon, type Org } from '../sessions/support.js';
import { insertProject } from '../../../storage/identity/orgs.js';
import { upsertOptionSnapshots } from '../../../storage/plugins/option-snapshots.js';
import { upsertProviderIntegration } from '../../../storage/integrations/provider-integrations.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';
import { connectionSealContext } from '../../../actors/services/integrations/oauth/index.js';
import { describeAnalytics, DAY } from './analytics-fixtures.js';

describeAnalytics((node) => {
  const { db } = node;
  let t: TestNode, acme: Org, globex: Org;
  before(() => ({ t, acme, globex } = node));

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
});
