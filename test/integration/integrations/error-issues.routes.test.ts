// Invariant: a session's error-tracker issues come from the org's own Sentry connection — fetched from Sentry's
// issue search with that connection's sealed access token, through the outbound guard, capped at 25 — and never
// from another org's: without a connection the answer is `{configured: false, issues: []}`, another org's session
// is 404, and a tracker that is down or refuses the token gives `configured: true`, no issues and an error, not a 5xx.
// An access token that expires within a minute, or that Sentry answers 401 to, is refreshed (RFC 6749 §6) once per
// connection however many lookups need it, a rotated refresh token replaces the stored one, and a refused refresh
// marks the connection for re-authorization until the org connects Sentry again.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provision, type Org } from '../agents/fixtures.js';
import { dispatchSession } from './delivery-fixtures.js';
import { connectionSealContext } from '../../../actors/integrations/oauth/index.js';
import { errorIssuesForSession } from '../../../actors/integrations/error-tracker/index.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';
import { ConnectionTokenRefreshes } from '../../../actors/integrations/oauth/connection-token.js';

const TOKEN = 'sntrys_test_access_token';
const CLIENT_ID = 'troupe-sentry-client';
const CLIENT_SECRET = 'troupe-sentry-secret';

/**
 * Sentry's organization list and organization issue search, with bearer checks as the real API does them, and its
 * OAuth endpoints: authorize, and a token endpoint that exchanges codes and refreshes tokens. A rotating refresh
 * token is spent by its first use (RFC 9700 §4.14.2): presenting it again is `invalid_grant`.
 */
function fakeSentry() {
  const issuesBySession = new Map<string, unknown[]>();
  const seen: { path: string; query: string | null; authorization: string | undefined }[] = [];
  const validTokens = new Set([TOKEN]);
  const refreshTokens = new Map<string, { rotates: boolean }>();
  const refreshRequests: URLSearchParams[] = [];
  const codes = new Set<string>();
  let down = false;
  let tokenEndpointDown = false;
  let refreshRaw: { status: number; body: string } | undefined;
  let holding: { until: number; held: { form: URLSearchParams; reply: Reply }[]; arrived: () => void } | undefined;
  let n = 0;

  type Reply = (status: number, body: unknown) => void;
  function decideRefresh(form: URLSearchParams): [number, unknown] {
    if (tokenEndpointDown) return [503, { detail: 'maintenance' }];
    if (form.get('client_id') !== CLIENT_ID || form.get('client_secret') !== CLIENT_SECRET) return [401, { error: 'invalid_client' }];
    const presented = form.get('refresh_token') ?? '';
    const grant = refreshTokens.get(presented);
    if (!grant) return [400, { error: 'invalid_grant', error_description: 'refresh token revoked, expired or already used' }];
    const accessToken = `sntrys_refreshed_${++n}`;
    validTokens.add(accessToken);
    if (!grant.rotates) return [200, { access_token: accessToken, token_type: 'bearer', expires_in: 3600 }];
    refreshTokens.delete(presented);
    const next = `rotated-refresh-${n}`;
    refreshTokens.set(next, { rotates: true });
    return [200, { access_token: accessToken, token_type: 'bearer', expires_in: 3600, refresh_token: next }];
  }
  /**
   * Holds refresh requests until `until` have arrived (`arrived`), without any timing. `answer(i)` decides all of
   * them in arrival order (the first honoured, a replay of its refresh token refused) and sends the i-th answer, so a
   * test chooses which node hears first.
   */
  function holdRefreshes(until: number) {
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => { arrived = resolve; });
    const hold = { until, held: [] as { form: URLSearchParams; reply: Reply }[], arrived };
    holding = hold;
    let decided: [number, unknown][] | undefined;
    return {
      arrived: arrival,
      answer(i: number): void {
        if (!decided) {
          holding = undefined;
          decided = hold.held.map((h) => decideRefresh(h.form));
        }
        hold.held[i]!.reply(...decided[i]!);
      },
    };
  }

  function answerCode(form: URLSearchParams, reply: Reply): void {
    const code = form.get('code') ?? '';
    if (form.get('client_secret') !== CLIENT_SECRET || !codes.delete(code) || !form.get('code_verifier')) return reply(400, { error: 'invalid_grant' });
    const accessToken = `sntrys_connected_${++n}`;
    validTokens.add(accessToken);
    refreshTokens.set(`connected-refresh-${n}`, { rotates: true });
    reply(200, { access_token: accessToken, token_type: 'bearer', expires_in: 3600, refresh_token: `connected-refresh-${n}`, scope: 'event:read' });
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sentry');
    seen.push({ path: url.pathname, query: url.searchParams.get('query'), authorization: req.headers.authorization });
    const reply: Reply = (status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && url.pathname === '/oauth/authorize/') {
      const code = `code-${++n}`;
      codes.add(code);
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state')!);
      res.writeHead(302, { location: back.toString() }).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/oauth/token/') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        if (form.get('grant_type') === 'authorization_code') return answerCode(form, reply);
        if (form.get('grant_type') !== 'refresh_token') return reply(400, { error: 'unsupported_grant_type' });
        refreshRequests.push(form);
        if (refreshRaw) {
          res.writeHead(refreshRaw.status, { 'content-type': 'application/json' }).end(refreshRaw.body);
          return;
        }
        if (!holding) return reply(...decideRefresh(form));
        holding.held.push({ form, reply });
        if (holding.held.length === holding.until) holding.arrived();
      });
      return;
    }
    if (down) return reply(503, { detail: 'maintenance' });
    if (!validTokens.has((req.headers.authorization ?? '').replace(/^Bearer /, ''))) return reply(401, { detail: 'Invalid token' });
    if (url.pathname === '/api/0/organizations/') return reply(200, [{ slug: 'acme', name: 'Acme' }]);
    if (url.pathname === '/api/0/organizations/acme/issues/') {
      const m = /^session_id:([0-9a-f]{16})$/.exec(url.searchParams.get('query') ?? '');
      const all = m ? issuesBySession.get(m[1]!) ?? [] : [];
      // All of them, whatever `limit` says: the 25 cap must hold on our side, not only through Sentry's paging.
      return reply(200, all);
    }
    reply(404, { detail: 'not found' });
  });
  return {
    server, issuesBySession, seen, validTokens, refreshTokens, refreshRequests,
    setDown: (v: boolean) => { down = v; },
    setTokenEndpointDown: (v: boolean) => { tokenEndpointDown = v; },
    /** Every refresh gets this raw answer instead (a junk or hostile token endpoint); undefined restores it. */
    setRefreshRaw: (v: { status: number; body: string } | undefined) => { refreshRaw = v; },
    holdRefreshes,
  };
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

  const dispatch = (o: Org) => dispatchSession(t, o, 'fix it');
  async function connectSentry(o: Org, accessToken: string, grant: { refreshToken?: string; expiresAt?: Date } = {}): Promise<void> {
    const orgId = o.orgId;
    const deps = t.node.deps;
    const tokens = { access_token: accessToken, token_type: 'bearer', ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {}) };
    await upsertOAuthConnection(deps.db, {
      orgId, provider: 'sentry', scope: 'event:read', expiresAt: grant.expiresAt ?? null, connectedBy: o.ownerId, at: new Date(),
      sealedTokens: deps.secrets.seal(JSON.stringify(tokens), connectionSealContext(orgId, 'sentry')),
    });
  }
  const errorIssues = (o: Org, id: string) => t.inject('GET', `/api/sessions/${id}/error-issues`, { token: o.apiKey });
  const connectionRow = (o: Org) => t.node.deps.db('integration_oauth_connections').where({ org_id: o.orgId, provider: 'sentry' }).first();
  async function storedTokens(o: Org): Promise<Record<string, unknown>> {
    const row = await connectionRow(o);
    return JSON.parse(t.node.deps.secrets.open(row.sealed_tokens, connectionSealContext(o.orgId, 'sentry'))) as Record<string, unknown>;
  }
  const aMinuteAgo = () => new Date(Date.now() - 60_000);
  /** A fresh org whose Sentry access token has expired, and a session of it with one tagged issue. */
  async function expiredConnection(grant: { refreshToken?: string; rotates?: boolean; accessToken?: string }): Promise<{ o: Org; session: string }> {
    const o = await provision(t);
    if (grant.refreshToken && grant.rotates !== undefined) sentry.refreshTokens.set(grant.refreshToken, { rotates: grant.rotates });
    await connectSentry(o, grant.accessToken ?? `expired-${o.orgId}`, { refreshToken: grant.refreshToken, expiresAt: aMinuteAgo() });
    const session = await dispatch(o);
    sentry.issuesBySession.set(session, [sentryIssue(7)]);
    return { o, session };
  }
  const refreshesPresenting = (refreshToken: string) => sentry.refreshRequests.filter((f) => f.get('refresh_token') === refreshToken).length;

  before(async () => {
    sentry = fakeSentry();
    await new Promise<void>((resolve) => sentry.server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(sentry.server.address() as AddressInfo).port}`;
    t = await startTestNode({
      engines: set,
      config: { outboundAllow: ['127.0.0.1'], sentryOAuthBaseUrl: base, sentryOAuthClientId: CLIENT_ID, sentryOAuthClientSecret: CLIENT_SECRET },
    });
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
