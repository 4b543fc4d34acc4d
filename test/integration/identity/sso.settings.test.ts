// Invariant: an org's single sign-on settings are its owners' to set and remove (admins read them; members, keys and
// other orgs do not), the client secret is sealed at rest and never answered, bad settings are a 4xx naming the
// member with nothing stored, a domain another org verified is not claimable, and every change is in the org's audit
// chain.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { addMember, chainOf, provisionSsoOrg, verifyDomain, type SsoOrg } from './sso-world.js';
import { clientSecretSealContext } from '../../../http/routes/sso-common.js';

for (const { set, skip } of engineSets) describe(`single sign-on settings (${set} engines)`, function () {
  if (skip) return;
  this.timeout(60_000);
  let t: TestNode;
  let acme: SsoOrg;
  let globex: SsoOrg;
  let admin: { token: string };
  let member: { token: string };
  let dns: TestDnsServer;
  const secret = 'client-secret-that-must-never-come-back';
  const settings = () => ({
    issuer: 'http://127.0.0.1:9/issuer', clientId: 'troupe', clientSecret: secret, emailDomains: [acme.domain.toUpperCase()],
    roleMap: { 'troupe-admins': 'admin', 'troupe-viewers': 'viewer' },
  });
  const path = (org: SsoOrg) => `/api/org/${org.orgId}/sso`;

  before(async () => {
    dns = await TestDnsServer.start();
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1'], ssoDnsServers: [dns.address] } });
    acme = await provisionSsoOrg(t, 'Acme');
    globex = await provisionSsoOrg(t, 'Globex');
    admin = await addMember(t, acme, 'admin', 'admin');
    member = await addMember(t, acme, 'member', 'member');
  });
  after(async () => {
    await t?.close();
    await dns?.close();
  });

  it('lets the owner set, read and remove them; the secret is sealed and never returned', async () => {
    const put = await t.call('PUT', path(acme), { token: acme.ownerToken, body: settings() });
    expect(put.status, put.text).to.equal(200);
    expect(put.json).to.deep.include({
      orgId: acme.orgId, issuer: 'http://127.0.0.1:9/issuer', clientId: 'troupe', clientSecretSet: true, emailDomains: [acme.domain],
      groupsClaim: 'groups', defaultRole: 'member', enforce: false, redirectUri: `${t.url}/auth/oidc/callback`,
    });
    expect(put.json.domains).to.have.length(1);
    expect(put.json.domains[0]).to.deep.include({ domain: acme.domain, status: 'pending', txtName: `_troupe-verification.${acme.domain}`, verifiedAt: null });
    expect(put.json.domains[0].txtValue).to.match(/^troupe-verification=[A-Za-z0-9_-]{22}$/);
    expect(put.text).to.not.include(secret);
    const row = await t.node.deps.db('org_sso').where({ org_id: acme.orgId }).first();
    expect(JSON.stringify(row)).to.not.include(secret);
    expect(t.node.deps.secrets.open(row.sealed_client_secret, clientSecretSealContext(acme.orgId))).to.equal(secret);

    const got = await t.call('GET', path(acme), { token: acme.ownerToken });
    expect(got.status, got.text).to.equal(200);
    expect(got.json).to.deep.equal(put.json);
    expect(got.text).to.not.include(secret);
    const byAdmin = await t.call('GET', path(acme), { token: admin.token });
    expect(byAdmin.status, byAdmin.text).to.equal(200);

    const removed = await t.call('DELETE', path(acme), { token: acme.ownerToken });
    expect(removed.status, removed.text).to.equal(200);
    expect((await t.call('GET', path(acme), { token: acme.ownerToken })).status).to.equal(404);
    expect((await t.call('DELETE', path(acme), { token: acme.ownerToken })).status).to.equal(404);
    const start = await t.call('POST', '/api/auth/oidc/start', { body: { email: `someone@${acme.domain}` } });
    expect(start.json).to.deep.equal({ sso: false });

    const chain = await chainOf(t, acme.ownerToken);
    const configured = chain.find((e) => e.type === 'sso.configured');
    expect(configured, 'sso.configured').to.not.equal(undefined);
    expect(configured!.payload).to.deep.include({ issuer: 'http://127.0.0.1:9/issuer', emailDomains: [acme.domain], enforce: false });
    expect(chain.map((e) => e.type)).to.include('sso.removed');
    expect(JSON.stringify(chain)).to.not.include(secret);
  });

  it('refuses admins, members and keys (403) and other orgs (404), changing nothing', async () => {
    expect((await t.call('PUT', path(acme), { token: acme.ownerToken, body: settings() })).status).to.equal(200);
    const before = (await t.call('GET', path(acme), { token: acme.ownerToken })).json;
    const changed = { ...settings(), clientId: 'hijacked' };
    for (const [who, token] of [['admin', admin.token], ['member', member.token], ['admin key', acme.apiKey]] as const) {
      expect((await t.call('PUT', path(acme), { token, body: changed })).status, `${who} PUT`).to.equal(403);
      expect((await t.call('DELETE', path(acme), { token })).status, `${who} DELETE`).to.equal(403);
    }
    expect((await t.call('GET', path(acme), { token: member.token })).status, 'member GET').to.equal(403);
    for (const token of [globex.ownerToken, globex.apiKey]) {
      expect((await t.call('PUT', path(acme), { token, body: changed })).status).to.equal(404);
      expect((await t.call('GET', path(acme), { token })).status).to.equal(404);
      expect((await t.call('DELETE', path(acme), { token })).status).to.equal(404);
    }
    expect((await t.call('GET', path(acme), { token: acme.ownerToken })).json).to.deep.equal(before);
  });

  it('answers bad settings with 400 naming the member, and a domain another org verified with 409', async () => {
    expect((await t.call('PUT', path(acme), { token: acme.ownerToken, body: settings() })).status).to.equal(200);
    await verifyDomain(t, dns, acme);
    const before = (await t.call('GET', path(acme), { token: acme.ownerToken })).json;
    const bad: [string, Record<string, unknown>, string][] = [
      ['plain http elsewhere than loopback', { issuer: 'http://login.example.com' }, 'issuer'],
      ['an issuer with a query', { issuer: 'https://login.example.com/?tenant=1' }, 'issuer'],
      ['an internal issuer', { issuer: 'https://10.0.0.1/' }, 'issuer'],
      ['a loopback issuer the operator did not allow', { issuer: 'http://127.0.0.2:9/' }, 'issuer'],
      ['an issuer with credentials', { issuer: 'https://user:pw@login.example.com' }, 'issuer'],
      ['an unknown role', { roleMap: { devs: 'superuser' } }, 'roleMap'],
      ['an unknown default role', { defaultRole: 'root' }, 'defaultRole'],
      ['a wildcard domain', { emailDomains: ['*.acme.test'] }, 'emailDomains'],
      ['no domain', { emailDomains: [] }, 'emailDomains'],
      ['a single label', { emailDomains: ['localhost'] }, 'emailDomains'],
      ['an IP address', { emailDomains: ['10.0.0.1'] }, 'emailDomains'],
      ['no secret', { clientSecret: '' }, 'clientSecret'],
      ['an unknown member', { tenant: 'x' }, 'tenant'],
    ];
    for (const [what, change, field] of bad) {
      const r = await t.call('PUT', path(acme), { token: acme.ownerToken, body: { ...settings(), ...change } });
      expect(r.status, `${what}: ${r.text}`).to.equal(400);
      expect(r.json.code, what).to.be.oneOf(['VALIDATION_FAILED']);
      expect(JSON.stringify(r.json), what).to.include(field);
    }
    const taken = await t.call('PUT', path(globex), { token: globex.ownerToken, body: { ...settings(), emailDomains: [globex.domain, acme.domain] } });
    expect(taken.status, taken.text).to.equal(409);
    expect(taken.json.error).to.include(acme.domain);
    expect((await t.call('GET', path(globex), { token: globex.ownerToken })).status, 'nothing stored for globex').to.equal(404);
    expect((await t.call('GET', path(acme), { token: acme.ownerToken })).json).to.deep.equal(before);
  });
});
