// Invariant: a token Sentry refuses with nothing to refresh it with, or a refused refresh (invalid_grant), marks the
// org's Sentry connection for re-authorization — the session view answers 200 with `reauthorization-required`,
// the provider is not called again, the palette shows it — until the org connects Sentry again; a token endpoint
// that is down or answers junk leaves the connection as it was. The fake Sentry: sentry-fixtures.ts.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, type TestNode } from '../../support/node.js';
import { provision } from '../agents/fixtures.js';
import { sentryWorld, TOKEN, type FakeSentry } from './sentry-fixtures.js';

for (const { set, skip } of engineSets) describe(`integrations: session error-tracker issues, re-authorization (Sentry OAuth connection) (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  const world = sentryWorld(set);
  const { dispatch, connectSentry, errorIssues, connectionRow, storedTokens, expiredConnection, refreshesPresenting } = world;
  let t: TestNode;
  let sentry: FakeSentry;
  before(() => ({ t, sentry } = world));

  it('a token Sentry refuses and no refresh token: marked for re-authorization, error reauthorization-required', async () => {
    const fresh = await provision(t);
    await connectSentry(fresh, 'revoked-token');
    const id = await dispatch(fresh);
    const before = sentry.refreshRequests.length;
    const r = await errorIssues(fresh, id);
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.deep.equal({ configured: true, issues: [], error: 'reauthorization-required' });
    expect((await connectionRow(fresh)).status).to.equal('reauthorization_required');
    expect(sentry.refreshRequests.length, 'nothing to refresh with').to.equal(before);
  });
  it('a refused refresh (invalid_grant) marks the connection: 200 with an error, no more provider calls, shown in the palette', async () => {
    const refreshToken = `revoked-${randomUUID()}`;
    const { o, session } = await expiredConnection({ refreshToken });
    const r = await errorIssues(o, session);
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.deep.equal({ configured: true, issues: [], error: 'reauthorization-required' });
    expect(refreshesPresenting(refreshToken)).to.equal(1);
    const row = await connectionRow(o);
    expect(row.status).to.equal('reauthorization_required');
    const audit = await t.node.deps.db('audit_log').where({ org_id: o.orgId, type: 'integration.oauth_reauthorization_required' }).select('payload');
    expect(audit.map((a: { payload: unknown }) => a.payload)).to.deep.equal([{ reason: 'invalid_grant' }]);

    const seenBefore = sentry.seen.length;
    const again = await errorIssues(o, session);
    expect(again.json).to.deep.equal({ configured: true, issues: [], error: 'reauthorization-required' });
    expect(sentry.seen.length, 'a marked connection reaches no provider').to.equal(seenBefore);

    const projects = await t.node.deps.db('projects').where({ org_id: o.orgId }).select('id');
    const palette = await t.inject('GET', `/api/projects/${projects[0].id}/palette?kind=errors`, { token: o.ownerToken });
    expect(palette.status, palette.text).to.equal(200);
    expect(palette.json.groups.errors[0]).to.include({ id: 'oauth:sentry', status: 'reauthorization_required' });
  });
  it('the token endpoint failing during a refresh: error unreachable, and the connection is not marked', async () => {
    const refreshToken = `outage-${randomUUID()}`;
    const { o, session } = await expiredConnection({ refreshToken, rotates: false });
    sentry.setTokenEndpointDown(true);
    try {
      const r = await errorIssues(o, session);
      expect(r.status, r.text).to.equal(200);
      expect(r.json).to.deep.equal({ configured: true, issues: [], error: 'unreachable' });
      expect((await connectionRow(o)).status).to.equal('connected');
    } finally {
      sentry.setTokenEndpointDown(false);
    }
    expect((await errorIssues(o, session)).json.issues, 'works once the provider is back').to.have.length(1);
  });
  it('a token endpoint answering junk during a refresh never makes the session view fail', async () => {
    const junk: [string, { status: number; body: string }, 'unreachable' | undefined][] = [
      ['not JSON', { status: 200, body: '<html>oops</html>' }, 'unreachable'],
      ['a JSON array', { status: 200, body: '[1,2]' }, 'unreachable'],
      ['an over-large body', { status: 200, body: JSON.stringify({ access_token: 'x', pad: 'p'.repeat(200_000) }) }, 'unreachable'],
      ['a 500 without JSON', { status: 500, body: 'Internal Server Error' }, 'unreachable'],
      ['expires_in beyond any date', { status: 200, body: JSON.stringify({ access_token: TOKEN, expires_in: 1e300 }) }, undefined],
      ['expires_in past the year 275760', { status: 200, body: JSON.stringify({ access_token: TOKEN, expires_in: 1e13 }) }, undefined],
      ['expires_in as a string', { status: 200, body: JSON.stringify({ access_token: TOKEN, expires_in: '3600' }) }, undefined],
    ];
    for (const [what, answer, error] of junk) {
      const { o, session } = await expiredConnection({ refreshToken: `junk-${randomUUID()}`, rotates: false });
      sentry.setRefreshRaw(answer);
      try {
        const r = await errorIssues(o, session);
        expect(r.status, `${what}: ${r.text}`).to.equal(200);
        expect(r.json.error, what).to.equal(error);
        expect(r.json.issues, what).to.have.length(error === undefined ? 1 : 0);
        expect((await connectionRow(o)).status, what).to.equal('connected');
      } finally {
        sentry.setRefreshRaw(undefined);
      }
    }
  });
  it('connecting again through authorize and callback clears the mark', async () => {
    const { o, session } = await expiredConnection({ refreshToken: `gone-${randomUUID()}` });
    expect((await errorIssues(o, session)).json.error).to.equal('reauthorization-required');

    // Over the socket: the redirect URI the provider sends the browser back to is built from the Host header.
    const start = await t.call('POST', '/api/integrations/sentry/oauth/authorize', { token: o.ownerToken });
    expect(start.status, start.text).to.equal(200);
    const consent = await fetch(start.json.authorizeUrl, { redirect: 'manual' });
    const back = new URL(consent.headers.get('location')!);
    const done = await t.call('GET', `${back.pathname}${back.search}`, { token: o.ownerToken });
    expect(done.status, done.text).to.equal(200);

    const row = await connectionRow(o);
    expect(row.status).to.equal('connected');
    expect(row.status_changed_at).to.equal(null);
    const tokens = await storedTokens(o);
    expect(tokens.refresh_token, 'the refresh token of the new grant is kept').to.match(/^connected-refresh-/);
    expect(new Date(row.expires_at).getTime(), 'expires_in kept as an instant').to.be.greaterThan(Date.now() + 3000_000);
    const r = await errorIssues(o, session);
    expect(r.json.error).to.equal(undefined);
    expect(r.json.issues).to.have.length(1);
    expect(sentry.seen.at(-1)!.authorization).to.equal(`Bearer ${tokens.access_token as string}`);
  });
});
