// Invariant: a Sentry access token that expires within a minute, or that Sentry answers 401 to, is refreshed
// (RFC 6749 §6) once per connection however many lookups need it, and on one node or two at once; a rotated
// refresh token replaces the stored one, and a reconnection made while a refresh is in flight is not overwritten.
// The lookups themselves: error-issues.routes.test.ts; the fake Sentry: sentry-fixtures.ts.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { engineSets, type TestNode } from '../../support/node.js';
import { provision } from '../agents/fixtures.js';
import { sentryWorld, CLIENT_ID, sentryIssue, type FakeSentry } from './sentry-fixtures.js';
import { errorIssuesForSession } from '../../../actors/services/integrations/error-tracker/index.js';
import { ConnectionTokenRefreshes } from '../../../actors/services/integrations/oauth/connection-token.js';

for (const { set, skip } of engineSets) describe(`integrations: session error-tracker issues, token refresh (Sentry OAuth connection) (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  const world = sentryWorld(set);
  const { dispatch, connectSentry, errorIssues, connectionRow, storedTokens, aMinuteAgo, expiredConnection, refreshesPresenting } = world;
  let t: TestNode;
  let sentry: FakeSentry;
  before(() => ({ t, sentry } = world));

  it('an expired access token is refreshed once at the token endpoint, then the lookup works with the new token', async () => {
    const { o, session } = await expiredConnection({ refreshToken: `keep-${randomUUID()}`, rotates: false });
    const refreshToken = (await storedTokens(o)).refresh_token as string;
    const versionBefore = Number((await connectionRow(o)).token_version);
    const r = await errorIssues(o, session);
    expect(r.status, r.text).to.equal(200);
    expect(r.json.error).to.equal(undefined);
    expect(r.json.issues.map((i: { id: string }) => i.id)).to.deep.equal(['1007']);

    expect(refreshesPresenting(refreshToken)).to.equal(1);
    const request = sentry.refreshRequests.find((f) => f.get('refresh_token') === refreshToken)!;
    expect(request.get('grant_type')).to.equal('refresh_token');
    expect(request.get('client_id')).to.equal(CLIENT_ID);
    const tokens = await storedTokens(o);
    expect(tokens.access_token).to.match(/^sntrys_refreshed_/);
    expect(sentry.seen.at(-1)!.authorization).to.equal(`Bearer ${tokens.access_token as string}`);
    expect(tokens.refresh_token, 'a provider that does not rotate keeps the old refresh token valid').to.equal(refreshToken);
    const row = await connectionRow(o);
    expect(row.sealed_tokens).to.not.include('sntrys_refreshed_');
    expect(new Date(row.expires_at).getTime()).to.be.greaterThan(Date.now() + 3000_000);
    expect(Number(row.token_version)).to.equal(versionBefore + 1);
    expect(row.refreshed_at).to.not.equal(null);

    expect((await errorIssues(o, session)).json.issues).to.have.length(1);
    expect(refreshesPresenting(refreshToken), 'the refreshed token is used until it expires').to.equal(1);
  });
  it('a token expiring within the minute is refreshed before it is used', async () => {
    const o = await provision(t);
    const refreshToken = `soon-${randomUUID()}`;
    sentry.refreshTokens.set(refreshToken, { rotates: false });
    const stillValid = `sntrys_soon_${randomUUID()}`;
    sentry.validTokens.add(stillValid);
    await connectSentry(o, stillValid, { refreshToken, expiresAt: new Date(Date.now() + 30_000) });
    const session = await dispatch(o);
    const r = await errorIssues(o, session);
    expect(r.json).to.deep.equal({ configured: true, issues: [] });
    expect(refreshesPresenting(refreshToken)).to.equal(1);
    expect(sentry.seen.filter((s) => s.authorization === `Bearer ${stillValid}`)).to.have.length(0);
  });
  it('a token Sentry answers 401 to before its expiry is refreshed once and the lookup retried', async () => {
    const o = await provision(t);
    const refreshToken = `on401-${randomUUID()}`;
    sentry.refreshTokens.set(refreshToken, { rotates: false });
    await connectSentry(o, 'revoked-early', { refreshToken, expiresAt: new Date(Date.now() + 3600_000) });
    const session = await dispatch(o);
    sentry.issuesBySession.set(session, [sentryIssue(3)]);
    const r = await errorIssues(o, session);
    expect(r.status, r.text).to.equal(200);
    expect(r.json.issues.map((i: { id: string }) => i.id)).to.deep.equal(['1003']);
    expect(refreshesPresenting(refreshToken)).to.equal(1);
  });
  it('a rotated refresh token is stored, and the next refresh presents it', async () => {
    const first = `rotating-${randomUUID()}`;
    const { o, session } = await expiredConnection({ refreshToken: first, rotates: true });
    expect((await errorIssues(o, session)).json.issues).to.have.length(1);
    const rotated = (await storedTokens(o)).refresh_token as string;
    expect(rotated).to.match(/^rotated-refresh-/);
    expect(sentry.refreshTokens.has(first), 'the provider spent the old one').to.equal(false);

    await t.node.deps.db('integration_oauth_connections').where({ org_id: o.orgId }).update({ expires_at: aMinuteAgo() });
    const again = await errorIssues(o, session);
    expect(again.json.error).to.equal(undefined);
    expect(again.json.issues).to.have.length(1);
    expect(refreshesPresenting(rotated)).to.equal(1);
    expect(refreshesPresenting(first)).to.equal(1);
    expect((await connectionRow(o)).status).to.equal('connected');
  });
  it('parallel lookups of one expired connection cause a single refresh', async () => {
    const refreshToken = `parallel-${randomUUID()}`;
    const { o, session } = await expiredConnection({ refreshToken, rotates: true });
    const answers = await Promise.all(Array.from({ length: 12 }, () => errorIssues(o, session)));
    for (const a of answers) {
      expect(a.status, a.text).to.equal(200);
      expect(a.json.error).to.equal(undefined);
      expect(a.json.issues).to.have.length(1);
    }
    expect(refreshesPresenting(refreshToken)).to.equal(1);
  });
  /**
   * Two nodes (two deps over one database, each with its own single flight) refresh the same expired connection
   * at once with a rotating refresh token; the provider honours the first request and refuses the replay.
   */
  async function raceTwoNodes(refusedHearsFirst: boolean) {
    const refreshToken = `race-${randomUUID()}`;
    const { o, session } = await expiredConnection({ refreshToken, rotates: true });
    const other = { ...t.node.deps, services: { ...t.node.deps.services, connectionTokens: new ConnectionTokenRefreshes() } };
    const nodes = [t.node.deps, other];
    const hold = sentry.holdRefreshes(2);
    const lookups = nodes.map((deps) => errorIssuesForSession(deps, o.orgId, session));
    await hold.arrived;
    expect(refreshesPresenting(refreshToken), 'both nodes asked').to.equal(2);
    // Whichever lookup settles first is the one that got the first answer sent (the other still waits for its own).
    hold.answer(refusedHearsFirst ? 1 : 0);
    const first = await Promise.race(lookups);
    const statusBetween = (await connectionRow(o)).status as string;
    hold.answer(refusedHearsFirst ? 0 : 1);
    const answers = await Promise.all(lookups);
    return { o, session, nodes, first, statusBetween, answers };
  }
  async function expectLiveRotatedTokenStored(r: Awaited<ReturnType<typeof raceTwoNodes>>): Promise<void> {
    expect((await connectionRow(r.o)).status).to.equal('connected');
    const stored = (await storedTokens(r.o)).refresh_token as string;
    expect(sentry.refreshTokens.has(stored), `stored ${stored} is live at the provider`).to.equal(true);
    const before = sentry.refreshRequests.length;
    for (const deps of r.nodes) expect((await errorIssuesForSession(deps, r.o.orgId, r.session)).issues).to.have.length(1);
    expect(sentry.refreshRequests.length, 'no further refresh').to.equal(before);
  }
  it('two nodes refreshing at once, the winner stores first: the refused node uses its tokens', async () => {
    const r = await raceTwoNodes(false);
    expect(r.statusBetween).to.equal('connected');
    for (const a of r.answers) expect(a).to.deep.include({ configured: true }).and.to.not.have.property('error');
    for (const a of r.answers) expect(a.issues).to.have.length(1);
    await expectLiveRotatedTokenStored(r);
  });
  it('two nodes refreshing at once, the refused node hears first: the winner still stores its rotated token', async () => {
    const r = await raceTwoNodes(true);
    expect(r.first).to.deep.equal({ configured: true, issues: [], error: 'reauthorization-required' });
    expect(r.statusBetween, 'the replay was refused before any refresh was stored').to.equal('reauthorization_required');
    expect(r.answers.filter((a) => a.issues.length === 1)).to.have.length(1);
    await expectLiveRotatedTokenStored(r);
  });
  it('a reconnection while a refresh is in flight wins: the late refresh does not overwrite the new grant', async () => {
    const refreshToken = `late-${randomUUID()}`;
    const { o, session } = await expiredConnection({ refreshToken, rotates: true });
    const hold = sentry.holdRefreshes(1);
    const lookup = errorIssues(o, session);
    await hold.arrived;

    // Over the socket: the redirect URI the provider sends the browser back to is built from the Host header.
    const start = await t.call('POST', '/api/integrations/sentry/oauth/authorize', { token: o.ownerToken });
    const consent = await fetch(start.json.authorizeUrl, { redirect: 'manual' });
    const back = new URL(consent.headers.get('location')!);
    expect((await t.call('GET', `${back.pathname}${back.search}`, { token: o.ownerToken })).status).to.equal(200);
    const reconnected = await storedTokens(o);

    hold.answer(0);
    const r = await lookup;
    expect(r.json.issues).to.have.length(1);
    expect(await storedTokens(o)).to.deep.equal(reconnected);
    expect(sentry.seen.at(-1)!.authorization, 'the lookup used the stored grant').to.equal(`Bearer ${reconnected.access_token as string}`);
  });
});
