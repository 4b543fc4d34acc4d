// Invariant: a machine client provisioned by the platform admin (secret shown once, stored only as a hash) obtains a
// short-lived Bearer JWT through the standard client_credentials grant — with a stock OAuth client library, HTTP Basic
// or body authentication, form or JSON — scoped to no more than it holds, and that token acts in its org with exactly
// those scopes (and its requester binding). Every failure is the RFC 6749 §5.2 error a client library expects, and
// no hostile request produces a 5xx.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ClientCredentials } from 'simple-oauth2';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';
import { MACHINE_TOKEN_TTL_SECONDS } from '../../../actors/services/identity/tokens.js';

const TOKEN_PATH = '/api/oauth/token';

for (const { set, skip } of engineSets) describe(`integrations: machine tokens (OAuth client_credentials) (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;
  let client: { clientId: string; clientSecret: string };

  const createClient = (body: Record<string, unknown>, token = t.adminToken) => t.inject('POST', '/api/admin/m2m-clients', { token, body });
  const form = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    t.inject('POST', TOKEN_PATH, { rawBody: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  const library = (id: string, secret: string, authorizationMethod: 'header' | 'body' = 'header') => new ClientCredentials({
    client: { id, secret }, auth: { tokenHost: t.url, tokenPath: TOKEN_PATH }, options: { authorizationMethod },
  });
  const dispatch = (token: string) => t.inject('POST', '/api/agent-dispatch', { token, body: { projectId: org.projectId, prompt: 'from a machine' } });

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
    const r = await createClient({ orgId: org.orgId, name: 'deployer', scopes: ['read', 'write'] });
    expect(r.status, r.text).to.equal(201);
    expect(r.headers.get('cache-control')).to.equal('no-store');
    client = { clientId: r.json.clientId, clientSecret: r.json.clientSecret };
  });
  after(async () => { await t?.close(); });

  it('stores only a hash of the secret', async () => {
    const rows = await t.node.deps.db('m2m_client_secrets').where({ client_id: client.clientId });
    expect(rows).to.have.length(1);
    expect(JSON.stringify(rows)).to.not.include(client.clientSecret);
  });

  it('simple-oauth2 (HTTP Basic) gets a Bearer token with every held scope, which acts in the org', async () => {
    const accessToken = await library(client.clientId, client.clientSecret).getToken({});
    expect(accessToken.token).to.include({ token_type: 'Bearer', expires_in: MACHINE_TOKEN_TTL_SECONDS, scope: 'read write' });
    const token = accessToken.token.access_token as string;
    const who = await t.inject('GET', '/api/cli/whoami', { token });
    expect(who.status, who.text).to.equal(200);
    expect(who.json.org.id).to.equal(org.orgId);
    expect(who.json.scopes).to.have.members(['read', 'write']);
    expect((await dispatch(token)).status).to.equal(201);
    expect((await t.inject('GET', `/api/org/${other.orgId}/requesters`, { token })).status).to.equal(403);
  });

  it('simple-oauth2 (body auth) narrows to the requested scope; a read-only token cannot dispatch', async () => {
    const accessToken = await library(client.clientId, client.clientSecret, 'body').getToken({ scope: 'read' });
    expect(accessToken.token.scope).to.equal('read');
    expect((await dispatch(accessToken.token.access_token as string)).status).to.equal(403);
  });

  it('accepts JSON bodies as well as form bodies', async () => {
    const r = await t.inject('POST', TOKEN_PATH, { body: { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: 'write' } });
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.include({ token_type: 'Bearer', scope: 'write' });
    expect(r.headers.get('cache-control')).to.equal('no-store');
  });

  it('answers RFC 6749 §5.2 errors: invalid_client 401 with WWW-Authenticate, the rest 400', async () => {
    const lib = await library(client.clientId, 'trs_wrong').getToken({}).then(() => undefined, (err: { output?: { statusCode: number }; data?: { payload?: unknown } }) => err);
    expect(lib?.output?.statusCode).to.equal(401);
    expect(lib?.data?.payload).to.deep.include({ error: 'invalid_client' });

    const cases: Array<[Record<string, string>, Record<string, string>, number, string]> = [
      [{ grant_type: 'client_credentials' }, { authorization: basic(client.clientId, `${client.clientSecret}x`) }, 401, 'invalid_client'],
      [{ grant_type: 'client_credentials' }, { authorization: basic(randomUUID(), client.clientSecret) }, 401, 'invalid_client'],
      [{ grant_type: 'client_credentials' }, { authorization: basic('not-a-uuid', 'x') }, 401, 'invalid_client'],
      [{ grant_type: 'client_credentials' }, { authorization: 'Basic %%%' }, 401, 'invalid_client'],
      [{ grant_type: 'client_credentials' }, {}, 401, 'invalid_client'],
      [{ grant_type: 'client_credentials', client_id: client.clientId }, {}, 401, 'invalid_client'],
      [{ grant_type: 'password' }, { authorization: basic(client.clientId, client.clientSecret) }, 400, 'unsupported_grant_type'],
      [{ grant_type: 'client_credentials', scope: 'admin' }, { authorization: basic(client.clientId, client.clientSecret) }, 400, 'invalid_scope'],
      [{ grant_type: 'client_credentials', scope: 'read "x' }, { authorization: basic(client.clientId, client.clientSecret) }, 400, 'invalid_scope'],
      [{}, { authorization: basic(client.clientId, client.clientSecret) }, 400, 'invalid_request'],
      [{ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }, { authorization: basic(client.clientId, client.clientSecret) }, 400, 'invalid_request'],
    ];
    for (const [fields, headers, status, error] of cases) {
      const r = await form(fields, headers);
      expect(r.status, `${JSON.stringify(fields)} ${error}`).to.equal(status);
      expect(r.json).to.have.property('error', error);
      expect(r.json.error_description).to.be.a('string');
      if (status === 401) expect(r.headers.get('www-authenticate')).to.match(/^Basic realm="troupe"/);
    }
  });

  it('hostile bodies are 4xx, never 5xx', async () => {
    const auth = { authorization: basic(client.clientId, client.clientSecret) };
    const send = (rawBody: string | Buffer, contentType: string) => t.inject('POST', TOKEN_PATH, { rawBody, headers: { 'content-type': contentType, ...auth } });
    expect((await send('{"grant_type":', 'application/json')).status).to.equal(400);
    expect((await send('[1]', 'application/json')).json).to.include({ error: 'invalid_request' });
    expect((await send('{"grant_type":["client_credentials"]}', 'application/json')).json).to.include({ error: 'invalid_request' });
    expect((await send('grant_type=client_credentials', 'text/plain')).status).to.equal(415);
    expect((await send(Buffer.from([0xff, 0xfe]), 'application/x-www-form-urlencoded')).status).to.equal(400);
    expect((await send(`grant_type=client_credentials&scope=${'a'.repeat(20_000)}`, 'application/x-www-form-urlencoded')).status).to.equal(413);
  });

  it('a client bound to a requester yields tokens that must sign dispatches', async () => {
    const reg = await t.inject('POST', `/api/org/${org.orgId}/requesters`, {
      token: org.ownerToken, body: { name: 'bound-machine', mode: 'strict', publicKey: Buffer.alloc(32, 7).toString('base64') },
    });
    expect(reg.status, reg.text).to.equal(201);
    const created = await createClient({ orgId: org.orgId, name: 'bound', scopes: ['write'], requesterId: reg.json.requester.id });
    expect(created.status, created.text).to.equal(201);
    expect(created.json.requesterId).to.equal(reg.json.requester.id);
    const tok = await library(created.json.clientId, created.json.clientSecret).getToken({});
    const r = await dispatch(tok.token.access_token as string);
    expect(r.status).to.equal(401);
  });

  it('provisioning is for the platform admin only, and checks org, requester and scopes', async () => {
    const body = { orgId: org.orgId, name: 'x', scopes: ['read'] };
    expect((await createClient(body, org.ownerToken)).status).to.equal(403);
    expect((await createClient(body, org.apiKey)).status).to.equal(403);
    expect((await t.inject('POST', '/api/admin/m2m-clients', { body })).status).to.equal(401);
    expect((await createClient({ ...body, orgId: randomUUID() })).status).to.equal(404);
    const foreign = await t.inject('POST', `/api/org/${other.orgId}/requesters`, { token: other.ownerToken, body: { name: 'theirs', mode: 'light' } });
    expect((await createClient({ ...body, requesterId: foreign.json.requester.id })).status).to.equal(400);
    for (const bad of [{ ...body, scopes: [] }, { ...body, scopes: ['root'] }, { ...body, scopes: ['read', 'read'] }, { ...body, name: '' }, { ...body, extra: 1 }, { name: 'x', scopes: ['read'] }]) {
      expect((await createClient(bad)).status, JSON.stringify(bad)).to.equal(400);
    }
  });
});
