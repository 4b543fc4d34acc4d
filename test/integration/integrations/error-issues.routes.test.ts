// Invariant: a session's error-tracker issues come from the org's own Sentry connection — fetched from Sentry's
// issue search with that connection's sealed access token, through the outbound guard, capped at 25 — and never
// from another org's: without a connection the answer is `{configured: false, issues: []}`, another org's session
// is 404 (and another org's connection is never read, refreshed or marked), and a tracker that is down gives
// `configured: true`, no issues and an error, not a 5xx. Refreshing a token: error-issues.refresh.test.ts; a
// connection that needs re-authorization: error-issues.reauthorization.test.ts; the fake Sentry: sentry-fixtures.ts.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode } from '../../support/node.js';
import { provision, type Org } from '../agents/fixtures.js';
import { sentryWorld, TOKEN, sentryIssue, type FakeSentry } from './sentry-fixtures.js';
import { connectionSealContext } from '../../../actors/services/integrations/oauth/index.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';

for (const { set, skip } of engineSets) describe(`integrations: session error-tracker issues, lookups (Sentry OAuth connection) (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  const world = sentryWorld(set);
  const { dispatch, connectSentry, errorIssues, connectionRow, expiredConnection, refreshesPresenting } = world;
  let sentry: FakeSentry;
  let org: Org;
  let other: Org;
  before(() => ({ sentry, org, other } = world));

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
  it("another org's connection is never touched by a lookup, a refresh or a refusal", async () => {
    const theirRefresh = `theirs-${randomUUID()}`;
    const theirs = await expiredConnection({ refreshToken: theirRefresh, rotates: true });
    const theirRowBefore = await connectionRow(theirs.o);
    const mine = await expiredConnection({ refreshToken: `mine-revoked-${randomUUID()}` });
    const ownRefresh = `mine-ok-${randomUUID()}`;
    const mineOk = await expiredConnection({ refreshToken: ownRefresh, rotates: true });

    expect((await errorIssues(mine.o, mine.session)).json.error).to.equal('reauthorization-required');
    expect((await errorIssues(mineOk.o, mineOk.session)).json.issues).to.have.length(1);
    expect((await errorIssues(mine.o, theirs.session)).status, "another org's session").to.equal(404);

    expect(refreshesPresenting(theirRefresh)).to.equal(0);
    expect(await connectionRow(theirs.o)).to.deep.equal(theirRowBefore);
    const r = await errorIssues(theirs.o, theirs.session);
    expect(r.json.issues, 'their own lookup refreshes their own connection').to.have.length(1);
    expect(refreshesPresenting(theirRefresh)).to.equal(1);
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
