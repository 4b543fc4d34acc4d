// Invariant: an org admin connects a provider through OAuth with PKCE S256 against the provider's real endpoints
// (here a fake provider on loopback that checks client credentials, redirect URI and code verifier as a real one
// does): the state is single use, expires, and works only for the org and user it was issued to; the verifier
// never reaches the browser; the tokens are stored sealed; a provider's refusal or failure connects nothing.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { addUser, provision, type Org } from '../agents/fixtures.js';
import { connectionSealContext, hashState } from '../../../actors/services/integrations/oauth/index.js';

const CLIENT_ID = 'troupe-test-client';
const CLIENT_SECRET = 'troupe-test-secret';

interface IssuedCode { challenge: string; redirectUri: string; used: boolean }

/** A provider's authorize and token endpoints, strict the way real ones are. */
function fakeProvider() {
  const codes = new Map<string, IssuedCode>();
  const tokenRequests: URLSearchParams[] = [];
  let failNextToken = false;
  let n = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://provider');
    if (req.method === 'GET' && url.pathname === '/oauth/authorize') {
      // The user consents at once: redirect back with a code tied to the challenge and redirect URI.
      const q = url.searchParams;
      if (q.get('client_id') !== CLIENT_ID || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) {
        res.writeHead(400).end('bad authorize request');
        return;
      }
      const code = `code-${++n}`;
      codes.set(code, { challenge: q.get('code_challenge')!, redirectUri: q.get('redirect_uri')!, used: false });
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state')!);
      res.writeHead(302, { location: back.toString() }).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/oauth/token') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        tokenRequests.push(form);
        const reply = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        if (failNextToken) { failNextToken = false; res.writeHead(503).end('down for maintenance'); return; }
        if (form.get('client_id') !== CLIENT_ID || form.get('client_secret') !== CLIENT_SECRET) return reply(401, { error: 'invalid_client' });
        const issued = codes.get(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        if (form.get('grant_type') !== 'authorization_code' || !issued || issued.used || issued.redirectUri !== form.get('redirect_uri')
          || createHash('sha256').update(verifier).digest('base64url') !== issued.challenge) {
          return reply(400, { error: 'invalid_grant', error_description: 'code, verifier or redirect_uri mismatch' });
        }
        issued.used = true;
        reply(200, { access_token: `lin_oauth_${form.get('code')}`, token_type: 'Bearer', expires_in: 3600, scope: 'read', refresh_token: 'refresh-1' });
      });
      return;
    }
    res.writeHead(404).end();
  });
  return { server, codes, tokenRequests, failNextTokenOnce: () => { failNextToken = true; } };
}

for (const { set, skip } of engineSets) describe(`integrations: provider OAuth connection (authorization code + PKCE) (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: Org;
  let other: Org;
  let provider: ReturnType<typeof fakeProvider>;
  let providerBase: string;

  const authorize = (token: string, p = 'linear') => t.call('POST', `/api/integrations/${p}/oauth/authorize`, { token });
  /** What the browser does: follow the authorize URL to the provider, which redirects back to our callback. */
  async function consent(authorizeUrl: string): Promise<string> {
    const res = await fetch(authorizeUrl, { redirect: 'manual' });
    expect(res.status).to.equal(302);
    const back = new URL(res.headers.get('location')!);
    expect(back.origin).to.equal(t.url);
    return `${back.pathname}${back.search}`;
  }
  const connection = (orgId: string) => t.node.deps.db('integration_oauth_connections').where({ org_id: orgId, provider: 'linear' }).first();

  before(async () => {
    provider = fakeProvider();
    await new Promise<void>((resolve) => provider.server.listen(0, '127.0.0.1', resolve));
    providerBase = `http://127.0.0.1:${(provider.server.address() as AddressInfo).port}`;
    t = await startTestNode({
      engines: set,
      config: { outboundAllow: ['127.0.0.1'], linearOAuthBaseUrl: providerBase, linearOAuthClientId: CLIENT_ID, linearOAuthClientSecret: CLIENT_SECRET },
    });
    org = await provision(t);
    other = await provision(t);
  });
  after(async () => {
    await t?.close();
    provider.server.closeAllConnections();
    await new Promise((resolve) => provider.server.close(resolve));
  });

  it('connects: PKCE S256 challenge out, verifier only server-side, tokens stored sealed, state stored hashed', async () => {
    const r = await authorize(org.ownerToken);
    expect(r.status, r.text).to.equal(200);
    const url = new URL(r.json.authorizeUrl);
    expect(`${url.origin}${url.pathname}`).to.equal(`${providerBase}/oauth/authorize`);
    expect(url.searchParams.get('state')).to.equal(r.json.state);
    expect(url.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(url.searchParams.get('code_challenge')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.has('code_verifier')).to.equal(false);
    const stored = await t.node.deps.db('integration_oauth_states').where({ org_id: org.orgId }).select('state_hash');
    expect(stored.map((s: { state_hash: string }) => s.state_hash)).to.deep.equal([hashState(r.json.state)]);

    const callback = await consent(r.json.authorizeUrl);
    const done = await t.call('GET', callback, { token: org.ownerToken });
    expect(done.status, done.text).to.equal(200);
    expect(done.json).to.include({ provider: 'linear', connected: true, scope: 'read' });

    const verifier = provider.tokenRequests.at(-1)!.get('code_verifier')!;
    expect(verifier).to.have.length.within(43, 128);
    const row = await connection(org.orgId);
    expect(row.sealed_tokens).to.not.include('lin_oauth_');
    const tokens = JSON.parse(t.node.deps.secrets.open(row.sealed_tokens, connectionSealContext(org.orgId, 'linear')));
    expect(tokens.access_token).to.match(/^lin_oauth_code-/);
    // What a refresh needs later: the refresh token (sealed with the rest) and expires_in as an instant.
    expect(tokens.refresh_token).to.equal('refresh-1');
    expect(new Date(row.expires_at).getTime()).to.be.within(Date.now() + 3500_000, Date.now() + 3600_000);
    expect(row.status).to.equal('connected');
    expect(await t.node.deps.db('integration_oauth_states').where({ org_id: org.orgId }).count('* as n').first()).to.deep.equal({ n: 0 });
  });

  it('a replayed state is 400 and reaches no provider', async () => {
    const r = await authorize(org.ownerToken);
    const callback = await consent(r.json.authorizeUrl);
    expect((await t.call('GET', callback, { token: org.ownerToken })).status).to.equal(200);
    const before = provider.tokenRequests.length;
    const replay = await t.call('GET', callback, { token: org.ownerToken });
    expect(replay.status, replay.text).to.equal(400);
    expect(replay.json.code).to.equal('VALIDATION_FAILED');
    expect(provider.tokenRequests.length).to.equal(before);
  });

  it('an expired state is 400', async () => {
    const r = await authorize(org.ownerToken);
    const callback = await consent(r.json.authorizeUrl);
    await t.node.deps.db('integration_oauth_states').where({ state_hash: hashState(r.json.state) }).update({ expires_at: new Date(Date.now() - 1000) });
    const late = await t.call('GET', callback, { token: org.ownerToken });
    expect(late.status, late.text).to.equal(400);
    expect(late.json.error).to.match(/expired/);
  });

  it("another org's state is 400 and does not burn it for its owner", async () => {
    const theirs = await authorize(other.ownerToken);
    expect(theirs.status, theirs.text).to.equal(200);
    const callback = await consent(theirs.json.authorizeUrl);
    const stolen = await t.call('GET', callback, { token: org.ownerToken });
    expect(stolen.status, stolen.text).to.equal(400);
    // Another admin of the same org is not the user the state was issued to either.
    const admin = await addUser(t, other.orgId, 'admin');
    expect((await t.call('GET', callback, { token: admin.token })).status).to.equal(400);
    const own = await t.call('GET', callback, { token: other.ownerToken });
    expect(own.status, own.text).to.equal(200);
    expect(await connection(other.orgId)).to.not.equal(undefined);
  });

  it("the provider's refusals connect nothing: denied consent, a bad code, a failing token endpoint", async () => {
    const fresh = await provision(t);
    const denied = await authorize(fresh.ownerToken);
    const deniedCb = await t.call('GET', `/api/integrations/linear/oauth/callback?error=access_denied&state=${denied.json.state}`, { token: fresh.ownerToken });
    expect(deniedCb.status, deniedCb.text).to.equal(400);
    expect(deniedCb.json.error).to.include('access_denied');

    const forged = await authorize(fresh.ownerToken);
    const badCode = await t.call('GET', `/api/integrations/linear/oauth/callback?code=forged&state=${forged.json.state}`, { token: fresh.ownerToken });
    expect(badCode.status, badCode.text).to.equal(400);
    expect(badCode.json.error).to.include('invalid_grant');

    const down = await authorize(fresh.ownerToken);
    const callback = await consent(down.json.authorizeUrl);
    provider.failNextTokenOnce();
    const failed = await t.call('GET', callback, { token: fresh.ownerToken });
    expect(failed.status, failed.text).to.equal(502);
    expect(failed.json.code).to.equal('UPSTREAM_FAILED');
    expect(await connection(fresh.orgId)).to.equal(undefined);
  });

  it('only admins and owners start a connection, as users, for known and configured providers', async () => {
    const member = await addUser(t, org.orgId, 'member');
    expect((await authorize(member.token)).status).to.equal(403);
    expect((await authorize(org.apiKey)).status).to.equal(403);
    expect((await authorize(org.ownerToken, 'myspace')).status).to.equal(404);
    expect((await authorize(org.ownerToken, 'github')).status).to.equal(409);
    expect((await t.call('GET', '/api/integrations/linear/oauth/callback?code=x', { token: org.ownerToken })).status).to.equal(400);
  });
});
