// Invariant: the platform admin rotates a machine client's secret without an outage — the old and the new secret
// both obtain tokens until the old one's overlap ends, after which the old one is `invalid_client` — and revokes a
// client so that the token endpoint refuses it and every token already issued to it is refused at once (whether
// this node had it memoised or not). Operators read clients back with each secret's lifetime but never a secret or
// hash. Only the admin token reaches these routes; an unknown or malformed client id is 404, and every rotation and
// revocation is in the org's audit chain.
import { expect } from 'chai';
import { createHash, randomUUID } from 'node:crypto';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { provisionOrg, type ProvisionedOrg } from '../governance/governance-fixtures.js';

const TOKEN_PATH = '/api/oauth/token';
const DAY_MS = 86_400_000;

for (const { set, skip } of engineSets) describe(`integrations: machine client rotation and revocation (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let org: ProvisionedOrg;
  let other: ProvisionedOrg;

  const provision = async (target: ProvisionedOrg = org, name = 'deployer') => {
    const r = await t.inject('POST', '/api/admin/m2m-clients', { token: t.adminToken, body: { orgId: target.orgId, name, scopes: ['read', 'write'] } });
    expect(r.status, r.text).to.equal(201);
    return { clientId: r.json.clientId as string, clientSecret: r.json.clientSecret as string };
  };
  const tokenFor = (clientId: string, clientSecret: string) => t.inject('POST', TOKEN_PATH, {
    rawBody: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  const rotate = (clientId: string, body?: unknown, token = t.adminToken) =>
    t.inject('POST', `/api/admin/m2m-clients/${clientId}/rotate`, { token, ...(body === undefined ? {} : { body }) });
  const revoke = (clientId: string, token = t.adminToken) => t.inject('DELETE', `/api/admin/m2m-clients/${clientId}`, { token });
  const show = (clientId: string, token = t.adminToken) => t.inject('GET', `/api/admin/m2m-clients/${clientId}`, { token });
  const whoami = (token: string) => t.inject('GET', '/api/cli/whoami', { token });
  const auditTypes = async (clientId: string) =>
    (await t.node.deps.db('audit_log').where({ org_id: org.orgId, subject: clientId }).orderBy('seq')).map((r: { type: string }) => r.type);

  before(async () => {
    t = await startTestNode({ engines: set });
    org = await provisionOrg(t);
    other = await provisionOrg(t);
  });
  after(async () => { await t?.close(); });

  it('a rotation hands out a new secret once; old and new both get tokens during the default one-day overlap', async () => {
    const client = await provision();
    const before = Date.now();
    const r = await rotate(client.clientId);
    expect(r.status, r.text).to.equal(200);
    expect(r.headers.get('cache-control')).to.equal('no-store');
    expect(r.json.clientId).to.equal(client.clientId);
    expect(r.json.clientSecret).to.match(/^trs_/).and.not.equal(client.clientSecret);
    const expiresAt = Date.parse(r.json.previousSecretsExpireAt);
    expect(expiresAt).to.be.within(before + DAY_MS, Date.now() + DAY_MS);

    for (const secret of [client.clientSecret, r.json.clientSecret as string]) {
      const tok = await tokenFor(client.clientId, secret);
      expect(tok.status, tok.text).to.equal(200);
      expect((await whoami(tok.json.access_token)).status).to.equal(200);
    }

    const shown = await show(client.clientId);
    expect(shown.status, shown.text).to.equal(200);
    expect(shown.json.revokedAt).to.equal(null);
    expect(shown.json.secrets).to.have.length(2);
    expect(shown.json.secrets[0]).to.include({ expiresAt: r.json.previousSecretsExpireAt, active: true });
    expect(shown.json.secrets[1]).to.include({ expiresAt: null, active: true });
    for (const secret of [client.clientSecret, r.json.clientSecret as string]) {
      expect(shown.text).to.not.include(secret).and.not.include(createHash('sha256').update(secret).digest('hex'));
    }
    expect(await auditTypes(client.clientId)).to.deep.equal(['m2m_client.created', 'm2m_client.secret_rotated']);
  });

  it('with overlapSeconds 0 the old secret is invalid_client at once, the new one works', async () => {
    const client = await provision();
    const r = await rotate(client.clientId, { overlapSeconds: 0 });
    expect(r.status, r.text).to.equal(200);
    const old = await tokenFor(client.clientId, client.clientSecret);
    expect(old.status).to.equal(401);
    expect(old.json).to.include({ error: 'invalid_client' });
    expect(old.headers.get('www-authenticate')).to.match(/^Basic/);
    expect((await tokenFor(client.clientId, r.json.clientSecret)).status).to.equal(200);
    const shown = await show(client.clientId);
    expect(shown.json.secrets.map((s: { active: boolean }) => s.active)).to.deep.equal([false, true]);
  });

  it('a later rotation keeps an earlier expiry, ends the secret it replaces, and forgets secrets already expired', async () => {
    const client = await provision();
    const first = await rotate(client.clientId, { overlapSeconds: 3600 });
    const second = await rotate(client.clientId, { overlapSeconds: 604_800 });
    expect(second.status, second.text).to.equal(200);
    const shown = (await show(client.clientId)).json;
    expect(shown.secrets.map((s: { expiresAt: string | null }) => s.expiresAt))
      .to.deep.equal([first.json.previousSecretsExpireAt, second.json.previousSecretsExpireAt, null]);
    for (const secret of [client.clientSecret, first.json.clientSecret, second.json.clientSecret]) {
      expect((await tokenFor(client.clientId, secret)).status).to.equal(200);
    }

    // Overlap 0 ends every older secret, those still overlapping included; the next rotation deletes them.
    const third = await rotate(client.clientId, { overlapSeconds: 0 });
    expect((await show(client.clientId)).json.secrets.map((s: { active: boolean }) => s.active)).to.deep.equal([false, false, false, true]);
    const fourth = await rotate(client.clientId, { overlapSeconds: 0 });
    expect(fourth.status, fourth.text).to.equal(200);
    const after = (await show(client.clientId)).json;
    expect(after.secrets.map((s: { active: boolean }) => s.active)).to.deep.equal([false, true]);
    expect(after.secrets[0].expiresAt).to.equal(fourth.json.previousSecretsExpireAt);
    for (const [secret, status] of [[client.clientSecret, 401], [first.json.clientSecret, 401], [second.json.clientSecret, 401], [third.json.clientSecret, 401], [fourth.json.clientSecret, 200]] as const) {
      expect((await tokenFor(client.clientId, secret)).status, secret.slice(0, 8)).to.equal(status);
    }
  });

  it('revocation ends the client at the token endpoint and every token it was issued, memoised or not', async () => {
    const client = await provision();
    const used = (await tokenFor(client.clientId, client.clientSecret)).json.access_token as string;
    const unused = (await tokenFor(client.clientId, client.clientSecret)).json.access_token as string;
    expect((await whoami(used)).status, 'memoised before the revocation').to.equal(200);
    const bystander = await provision(org, 'bystander');
    const bystanderToken = (await tokenFor(bystander.clientId, bystander.clientSecret)).json.access_token as string;
    expect((await whoami(bystanderToken)).status).to.equal(200);

    const r = await revoke(client.clientId);
    expect(r.status, r.text).to.equal(200);
    expect(r.json).to.include({ clientId: client.clientId, revoked: true });
    const revokedAt = r.json.revokedAt as string;

    expect((await whoami(used)).status, 'a memoised token is refused at once').to.equal(401);
    expect((await whoami(unused)).status, 'a token never seen is refused too').to.equal(401);
    const tok = await tokenFor(client.clientId, client.clientSecret);
    expect(tok.status).to.equal(401);
    expect(tok.json).to.include({ error: 'invalid_client' });
    expect((await whoami(bystanderToken)).status, 'another client of the org is untouched').to.equal(200);

    const again = await revoke(client.clientId);
    expect(again.status, again.text).to.equal(200);
    expect(again.json).to.deep.equal({ clientId: client.clientId, revoked: true, revokedAt });
    expect((await show(client.clientId)).json.revokedAt).to.equal(revokedAt);
    const rotated = await rotate(client.clientId);
    expect(rotated.status).to.equal(409);
    expect(rotated.json.code).to.equal('CONFLICT');
    expect(await auditTypes(client.clientId)).to.deep.equal(['m2m_client.created', 'm2m_client.revoked']);
    const verified = await t.inject('GET', `/api/admin/orgs/${org.orgId}/audit/verify`, { token: t.adminToken });
    expect(verified.json.valid, verified.text).to.equal(true);
  });

  it('lists one org\'s clients with their secrets\' lifetimes, never another org\'s, never a secret', async () => {
    const own = await provision(org, 'listed');
    const foreign = await provision(other, 'foreign');
    const r = await t.inject('GET', `/api/admin/m2m-clients?orgId=${org.orgId}`, { token: t.adminToken });
    expect(r.status, r.text).to.equal(200);
    const ids = r.json.clients.map((c: { clientId: string }) => c.clientId);
    expect(ids).to.include(own.clientId).and.not.include(foreign.clientId);
    expect(r.json.clients.every((c: { orgId: string }) => c.orgId === org.orgId)).to.equal(true);
    const listed = r.json.clients.find((c: { clientId: string }) => c.clientId === own.clientId);
    expect(listed).to.deep.include({ name: 'listed', scopes: ['read', 'write'], requesterId: null, revokedAt: null });
    expect(listed.secrets).to.have.length(1);
    expect(Object.keys(listed.secrets[0]).sort()).to.deep.equal(['active', 'createdAt', 'expiresAt', 'id']);
    expect(r.text).to.not.include(own.clientSecret).and.not.include(createHash('sha256').update(own.clientSecret).digest('hex'));

    expect((await t.inject('GET', `/api/admin/m2m-clients?orgId=${randomUUID()}`, { token: t.adminToken })).status).to.equal(404);
    for (const query of ['', '?orgId=nope', `?orgId=${org.orgId}&extra=1`]) {
      expect((await t.inject('GET', `/api/admin/m2m-clients${query}`, { token: t.adminToken })).status, query).to.equal(400);
    }
  });

  it('unknown or malformed client ids are 404 on every route, never 5xx', async () => {
    for (const id of [randomUUID(), 'not-a-uuid', '00000000-0000-0000-0000-00000000000g', '%27%3B--', 'a'.repeat(300)]) {
      for (const r of [await show(id), await rotate(id), await revoke(id)]) {
        expect(r.status, `${id}: ${r.text}`).to.equal(404);
        expect(r.json.code).to.equal('NOT_FOUND');
      }
    }
  });

  it('refuses an overlap outside 0..604800 seconds or not an integer', async () => {
    const client = await provision();
    for (const body of [{ overlapSeconds: -1 }, { overlapSeconds: 604_801 }, { overlapSeconds: 1.5 }, { overlapSeconds: '60' }, { overlapSeconds: null }, { extra: 1 }, []]) {
      const r = await rotate(client.clientId, body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
    }
    expect((await tokenFor(client.clientId, client.clientSecret)).status, 'a refused rotation changed nothing').to.equal(200);
    expect((await show(client.clientId)).json.secrets).to.have.length(1);
  });

  it('is for the platform admin only: user tokens, API keys and machine tokens are 403, nothing at all 401', async () => {
    const client = await provision();
    const machine = (await tokenFor(client.clientId, client.clientSecret)).json.access_token as string;
    const calls = [
      (token?: string) => t.inject('GET', `/api/admin/m2m-clients?orgId=${org.orgId}`, token === undefined ? {} : { token }),
      (token?: string) => t.inject('GET', `/api/admin/m2m-clients/${client.clientId}`, token === undefined ? {} : { token }),
      (token?: string) => t.inject('POST', `/api/admin/m2m-clients/${client.clientId}/rotate`, token === undefined ? { body: {} } : { token, body: {} }),
      (token?: string) => t.inject('DELETE', `/api/admin/m2m-clients/${client.clientId}`, token === undefined ? {} : { token }),
    ];
    for (const send of calls) {
      for (const token of [org.ownerToken, org.apiKey, machine]) expect((await send(token)).status).to.equal(403);
      expect((await send()).status).to.equal(401);
    }
    expect((await tokenFor(client.clientId, client.clientSecret)).status, 'nothing was rotated or revoked').to.equal(200);
    expect((await show(client.clientId)).json).to.deep.include({ revokedAt: null });
  });
});
