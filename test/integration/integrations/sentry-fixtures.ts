// The world of the session error-tracker tests (error-issues.*.test.ts): a fake Sentry (its issue search and its
// OAuth token endpoint), and a node whose Sentry OAuth points at it, with two orgs and the helpers the tests share.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestNode, type EngineSet, type TestNode } from '../../support/node.js';
import { provision, type Org } from '../agents/fixtures.js';
import { dispatchSession } from './delivery-fixtures.js';
import { connectionSealContext } from '../../../actors/services/integrations/oauth/index.js';
import { upsertOAuthConnection } from '../../../storage/integrations/oauth.js';

export const TOKEN = 'sntrys_test_access_token';
export const CLIENT_ID = 'troupe-sentry-client';
export const CLIENT_SECRET = 'troupe-sentry-secret';

/**
 * Sentry's organization list and organization issue search, with bearer checks as the real API does them, and its
 * OAuth endpoints: authorize, and a token endpoint that exchanges codes and refreshes tokens. A rotating refresh
 * token is spent by its first use (RFC 9700 §4.14.2): presenting it again is `invalid_grant`.
 */
export function fakeSentry() {
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

export type FakeSentry = ReturnType<typeof fakeSentry>;

/** Issue `n` as Sentry's issue search returns it. */
export const sentryIssue = (n: number) => ({
  id: String(1000 + n), shortId: `ACME-${n}`, title: `TypeError: boom ${n}`, culprit: 'worker.ts in run', level: 'error', status: 'unresolved',
  permalink: `https://acme.sentry.io/issues/${1000 + n}/`, count: String(n + 1), firstSeen: '2025-01-01T00:00:00Z', lastSeen: '2025-01-02T00:00:00Z',
  project: { id: '7', slug: 'backend', name: 'backend' },
});

/**
 * Registers the suite's `before` and `after`: a fake Sentry, and a node of `set` whose Sentry OAuth points at it
 * (loopback allowed outbound) with two provisioned orgs. The node, the orgs and the fake are read once `before` ran.
 */
export function sentryWorld(set: EngineSet) {
  let t: TestNode;
  let org: Org;
  let other: Org;
  let sentry: FakeSentry;

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

  return {
    get t() { return t; },
    get org() { return org; },
    get other() { return other; },
    get sentry() { return sentry; },
    dispatch, connectSentry, errorIssues, connectionRow, storedTokens, aMinuteAgo, expiredConnection, refreshesPresenting,
  };
}
