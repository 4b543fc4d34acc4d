// Invariant: a session's error-tracker issues come from the org's own Sentry connection — fetched from Sentry's
// issue search with that connection's sealed access token, through the outbound guard, capped at 25 — and never
// from another org's: without a connection the answer is `{configured: false, issues: []}`, another org's session
// is 404, and a tracker that is down or refuses the token gives `configured: true`, no issues and an error, not a 5xx.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provision, type Org } from '../agents/fixtures.js';
import { connectionSealContext } from '../../../actors/integrations/oauth/index.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';

const TOKEN = 'sntrys_test_access_token';

/** Sentry's organization list and organization issue search, with bearer checks as the real API does them. */
function fakeSentry() {
  const issuesBySession = new Map<string, unknown[]>();
  const seen: { path: string; query: string | null; authorization: string | undefined }[] = [];
  let down = false;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sentry');
    seen.push({ path: url.pathname, query: url.searchParams.get('query'), authorization: req.headers.authorization });
    const reply = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (down) return reply(503, { detail: 'maintenance' });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return reply(401, { detail: 'Invalid token' });
    if (url.pathname === '/api/0/organizations/') return reply(200, [{ slug: 'acme', name: 'Acme' }]);
    if (url.pathname === '/api/0/organizations/acme/issues/') {
      const m = /^session_id:([0-9a-f]{16})$/.exec(url.searchParams.get('query') ?? '');
      const all = m ? issuesBySession.get(m[1]!) ?? [] : [];
      // All of them, whatever `limit` says: the 25 cap must hold on our side, not only through Sentry's paging.
      return reply(200, all);
    }
    reply(404, { detail: 'not found' });
  });
  return { server, issuesBySession, seen, setDown: (v: boolean) => { down = v; } };
}

const sentryIssue = (n: number) => ({
  id: String(1000 + n), shortId: `ACME-${n}`, title: `TypeError: boom ${n}`, culprit: 'worker.ts in run', level: 'error', status: 'unresolved',
  permalink: `https://acme.sentry.io/issues/${1000 + n}/`, count: String(n + 1), firstSeen: '2025-01-01T00:00:00Z', lastSeen: '2025-01-02T00:00:00Z',
  project: { id: '7', slug: 'backend', name: 'backend' },
});

for (const { set, skip } of engineSets) describe(`integrations: session error-tracker issues (Sentry OAuth connection) (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: Org;
  let other: Org;
  let sentry: ReturnType<typeof fakeSentry>;

  async function dispatch(o: Org): Promise<string> {
    const projects = await t.node.deps.db('projects').where({ org_id: o.orgId }).select('id');
    const r = await t.call('POST', '/api/agent-dispatch', { token: o.apiKey, body: { projectId: projects[0].id, prompt: 'fix it' } });
    expect(r.status, r.text).to.equal(201);
    return r.json.sessionId as string;
  }
  async function connectSentry(o: Org, accessToken: string): Promise<void> {
    const orgId = o.orgId;
    const deps = t.node.deps;
    await upsertOAuthConnection(deps.db, {
      orgId, provider: 'sentry', scope: 'event:read', expiresAt: null, connectedBy: o.ownerId, at: new Date(),
      sealedTokens: deps.secrets.seal(JSON.stringify({ access_token: accessToken, token_type: 'bearer' }), connectionSealContext(orgId, 'sentry')),
    });
  }
  const errorIssues = (o: Org, id: string) => t.call('GET', `/api/sessions/${id}/error-issues`, { token: o.apiKey });

  before(async () => {
    sentry = fakeSentry();
    await new Promise<void>((resolve) => sentry.server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(sentry.server.address() as AddressInfo).port}`;
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1'], sentryOAuthBaseUrl: base } });
    org = await provision(t);
    other = await provision(t);
  });
  after(async () => {
    await t?.close();
    sentry.server.closeAllConnections();
    await new Promise((resolve) => sentry.server.close(resolve));
  });

  it('without a Sentry connection: configured false and no request to Sentry', async () => {
    const id = await dispatch(other);
    const before = sentry.seen.length;
    const r = await errorIssues(other, id);
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.deep.equal({ configured: false, issues: [] });
    expect(sentry.seen.length).to.equal(before);
  });

  it("lists the session's issues with the connection's token, at most 25", async () => {
    await connectSentry(org, TOKEN);
    const id = await dispatch(org);
    sentry.issuesBySession.set(id, Array.from({ length: 40 }, (_, n) => sentryIssue(n)));
    const r = await errorIssues(org, id);
    expect(r.status, r.text).to.equal(200);
    expect(r.json.configured).to.equal(true);
    expect(r.json.error).to.equal(undefined);
    expect(r.json.issues).to.have.length(25);
    expect(r.json.issues[0]).to.deep.equal({
      id: '1000', shortId: 'ACME-0', title: 'TypeError: boom 0', culprit: 'worker.ts in run', level: 'error', status: 'unresolved',
      url: 'https://acme.sentry.io/issues/1000/', count: 1, firstSeen: '2025-01-01T00:00:00Z', lastSeen: '2025-01-02T00:00:00Z',
      project: 'backend', organization: 'acme',
    });
    const search = sentry.seen.filter((s) => s.path === '/api/0/organizations/acme/issues/').at(-1)!;
    expect(search.query).to.equal(`session_id:${id}`);
    expect(search.authorization).to.equal(`Bearer ${TOKEN}`);
  });

  it('a session without tagged issues: configured, empty', async () => {
    const id = await dispatch(org);
    const r = await errorIssues(org, id);
    expect(r.json).to.deep.equal({ configured: true, issues: [] });
  });

  it("another org's session is 404 and reaches no provider", async () => {
    const theirs = await dispatch(other);
    const before = sentry.seen.length;
    const r = await errorIssues(org, theirs);
    expect(r.status, r.text).to.equal(404);
    expect(sentry.seen.length).to.equal(before);
  });

  it('Sentry down: 200, configured, no issues, error unreachable', async () => {
    const id = await dispatch(org);
    sentry.issuesBySession.set(id, [sentryIssue(1)]);
    sentry.setDown(true);
    try {
      const r = await errorIssues(org, id);
      expect(r.status, r.text).to.equal(200);
      expect(r.json).to.deep.equal({ configured: true, issues: [], error: 'unreachable' });
    } finally {
      sentry.setDown(false);
    }
  });

  it('a token Sentry refuses: error unauthorized', async () => {
    const fresh = await provision(t);
    await connectSentry(fresh, 'revoked-token');
    const id = await dispatch(fresh);
    const r = await errorIssues(fresh, id);
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.deep.equal({ configured: true, issues: [], error: 'unauthorized' });
  });

  it('the outbound guard applies: a tracker on loopback that is not allowed is never contacted', async () => {
    const guarded = await startTestNode({ engines: set, config: { sentryOAuthBaseUrl: `http://127.0.0.1:${(sentry.server.address() as AddressInfo).port}` } });
    try {
      const o = await provision(guarded);
      const deps = guarded.node.deps;
      await upsertOAuthConnection(deps.db, {
        orgId: o.orgId, provider: 'sentry', scope: null, expiresAt: null, connectedBy: o.ownerId, at: new Date(),
        sealedTokens: deps.secrets.seal(JSON.stringify({ access_token: TOKEN }), connectionSealContext(o.orgId, 'sentry')),
      });
      const projects = await deps.db('projects').where({ org_id: o.orgId }).select('id');
      const d = await guarded.call('POST', '/api/agent-dispatch', { token: o.apiKey, body: { projectId: projects[0].id, prompt: 'x' } });
      const before = sentry.seen.length;
      const r = await guarded.call('GET', `/api/sessions/${d.json.sessionId}/error-issues`, { token: o.apiKey });
      expect(r.json).to.deep.equal({ configured: true, issues: [], error: 'unreachable' });
      expect(sentry.seen.length).to.equal(before);
    } finally {
      await guarded.close();
    }
  });
});
