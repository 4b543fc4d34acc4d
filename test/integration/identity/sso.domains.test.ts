// Invariant: a claimed single sign-on domain routes no sign-in and takes no `enforce` until its org proves it with the
// DNS TXT record its settings name (a real resolver asking a DNS server on loopback): a wrong or missing record is a
// 409 saying what was found, a failed lookup a 503, the right one verifies it; another org's pending claim of the
// domain is no bar, and the first org to verify holds it. Only the org's owners verify, other orgs see nothing, and a
// hostile domain is a 400.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { TestOidcProvider, type OidcClient } from '../../support/oidc-provider.js';
import { PASSWORD, addMember, chainOf, claimOf, nodeClient, provisionSsoOrg, verifyCall, verifyDomain, type SsoOrg } from './sso-world.js';

for (const { set, skip } of engineSets) describe(`single sign-on domain verification (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let dns: TestDnsServer;
  let acme: SsoOrg;
  let globex: SsoOrg;
  let acmeClient: OidcClient;
  let globexClient: OidcClient;
  let acmeProvider: TestOidcProvider;
  let globexProvider: TestOidcProvider;
  const put = (org: SsoOrg, provider: TestOidcProvider, client: OidcClient, body: Record<string, unknown>) => t.call('PUT', `/api/org/${org.orgId}/sso`, {
    token: org.ownerToken, body: { issuer: provider.issuer, clientId: client.clientId, clientSecret: client.clientSecret, ...body },
  });
  const start = (email: string) => t.call('POST', '/api/auth/oidc/start', { body: { email } });

  before(async () => {
    dns = await TestDnsServer.start();
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1'], ssoDnsServers: [dns.address] } });
    acme = await provisionSsoOrg(t, 'Acme');
    globex = await provisionSsoOrg(t, 'Globex');
    acmeClient = nodeClient(t);
    globexClient = nodeClient(t);
    acmeProvider = await TestOidcProvider.start([acmeClient]);
    globexProvider = await TestOidcProvider.start([globexClient]);
  });
  after(async () => {
    await t?.close();
    await dns?.close();
    await acmeProvider?.close();
    await globexProvider?.close();
  });

  it('routes nothing while pending; a wrong or missing record is a 409 naming what was found; the right one verifies', async () => {
    expect((await put(acme, acmeProvider, acmeClient, { emailDomains: [acme.domain], enforce: true })).status).to.equal(200);
    const claim = await claimOf(t, acme);
    expect(claim).to.deep.include({ status: 'pending', txtName: `_troupe-verification.${acme.domain}`, verifiedAt: null });
    expect((await start(`ada@${acme.domain}`)).json, 'a pending domain signs in with the password').to.deep.equal({ sso: false });
    const login = () => t.call('POST', '/api/auth/login', { body: { email: acme.ownerEmail, password: PASSWORD } });
    expect((await login()).status, 'enforce takes no pending domain').to.equal(200);

    const missing = await verifyCall(t, acme);
    expect(missing.status, missing.text).to.equal(409);
    expect(missing.json.error).to.include(`no TXT record at ${claim.txtName}`).and.include(claim.txtValue);

    // Another org's record, a stale one, and an SPF record: none is this claim's.
    const found = ['troupe-verification=someone-elses-token', 'v=spf1 -all'];
    dns.setTxt(claim.txtName, found);
    const wrong = await verifyCall(t, acme);
    expect(wrong.status, wrong.text).to.equal(409);
    expect(wrong.json.error).to.include('"troupe-verification=someone-elses-token"').and.include('"v=spf1 -all"').and.include(claim.txtValue);
    expect(wrong.json.details).to.deep.include({ txtName: claim.txtName, expected: claim.txtValue, found });

    dns.setTxt(claim.txtName, [claim.txtValue]);
    dns.failFor(claim.txtName);
    const failed = await verifyCall(t, acme);
    expect(failed.status, failed.text).to.equal(503);
    expect(failed.json.code).to.equal('DNS_LOOKUP_FAILED');
    expect(failed.json.error).to.include('lookup').and.include('failed');
    expect(Number(failed.headers.get('retry-after'))).to.be.at.least(1);
    expect((await claimOf(t, acme)).status, 'a failed lookup changes nothing').to.equal('pending');
    dns.failFor(claim.txtName, false);

    dns.setTxt(claim.txtName, ['v=spf1 -all', claim.txtValue]);
    const verified = await verifyCall(t, acme);
    expect(verified.status, verified.text).to.equal(200);
    expect(verified.json).to.deep.include({ domain: acme.domain, status: 'verified', txtName: claim.txtName, txtValue: claim.txtValue });
    expect(verified.json.verifiedAt).to.be.a('string');
    const started = await start(`ada@${acme.domain}`);
    expect(started.json.sso, started.text).to.equal(true);
    expect(started.json.authorizationUrl).to.match(new RegExp(`^${acmeProvider.issuer}/`));
    expect((await login()).json.code, 'enforce now takes the verified domain').to.equal('SSO_REQUIRED');

    // Saving the settings again keeps the domain verified, with the same record; the record may then go.
    dns.setTxt(claim.txtName, []);
    expect((await put(acme, acmeProvider, acmeClient, { emailDomains: [acme.domain], enforce: false })).status).to.equal(200);
    expect(await claimOf(t, acme)).to.deep.include({ status: 'verified', txtValue: claim.txtValue });
    const entry = (await chainOf(t, acme.ownerToken)).find((e) => e.type === 'sso.domain_verified');
    expect(entry?.payload).to.deep.equal({ domain: acme.domain, txtName: claim.txtName });
  });

  it('lets another org claim a pending domain; whoever verifies first holds it, and the other claim shows taken', async () => {
    const contested = `contested-${acme.orgId.slice(0, 8)}.test`;
    expect((await put(acme, acmeProvider, acmeClient, { emailDomains: [acme.domain, contested] })).status).to.equal(200);
    const globexPut = await put(globex, globexProvider, globexClient, { emailDomains: [globex.domain, contested] });
    expect(globexPut.status, `a pending claim is no bar: ${globexPut.text}`).to.equal(200);
    const acmeClaim = await claimOf(t, acme, contested);
    const globexClaim = await claimOf(t, globex, contested);
    expect(acmeClaim.txtName).to.equal(globexClaim.txtName);
    expect(acmeClaim.txtValue, 'a token per org and domain').to.not.equal(globexClaim.txtValue);

    // Whoever controls the domain publishes Globex's record: Acme's verification finds it and is refused.
    dns.setTxt(globexClaim.txtName, [globexClaim.txtValue]);
    expect((await verifyCall(t, acme, contested)).status, "one org's record proves no other org's claim").to.equal(409);
    expect((await verifyCall(t, globex, contested)).status).to.equal(200);
    expect((await claimOf(t, acme, contested)).status).to.equal('taken');
    const started = await start(`someone@${contested}`);
    expect(started.json.authorizationUrl, 'the domain signs in at the verifying org').to.match(new RegExp(`^${globexProvider.issuer}/`));

    // Even with its own record published too, Acme comes second.
    dns.setTxt(globexClaim.txtName, [globexClaim.txtValue, acmeClaim.txtValue]);
    const second = await verifyCall(t, acme, contested);
    expect(second.status, second.text).to.equal(409);
    expect(second.json.error).to.include('already verified by another org');
    const reclaim = await put(acme, acmeProvider, acmeClient, { emailDomains: [acme.domain, contested] });
    expect(reclaim.status, 'a domain verified elsewhere cannot be claimed anew').to.equal(409);
    expect(reclaim.json.error).to.include(contested);

    // Globex lets it go: Acme's claim is pending again and may now be proven.
    expect((await put(globex, globexProvider, globexClient, { emailDomains: [globex.domain] })).status).to.equal(200);
    expect((await claimOf(t, acme, contested)).status).to.equal('pending');
    expect((await start(`someone@${contested}`)).json).to.deep.equal({ sso: false });
    expect((await verifyCall(t, acme, contested)).status).to.equal(200);
    expect((await start(`someone@${contested}`)).json.authorizationUrl).to.match(new RegExp(`^${acmeProvider.issuer}/`));
  });

  it('answers two verifications of one claim at once both as verified, and audits it once', async () => {
    const twice = `twice-${acme.orgId.slice(0, 8)}.test`;
    expect((await put(acme, acmeProvider, acmeClient, { emailDomains: [acme.domain, twice] })).status).to.equal(200);
    const claim = await claimOf(t, acme, twice);
    dns.setTxt(claim.txtName, [claim.txtValue]);
    const answers = await Promise.all([verifyCall(t, acme, twice), verifyCall(t, acme, twice)]);
    expect(answers.map((a) => [a.status, a.json.status]), answers.map((a) => a.text).join(' | ')).to.deep.equal([[200, 'verified'], [200, 'verified']]);
    const entries = (await chainOf(t, acme.ownerToken)).filter((e) => e.type === 'sso.domain_verified' && e.payload.domain === twice);
    expect(entries).to.have.length(1);
  });

  it("lets only the org's owners verify; another org neither verifies nor sees its domains", async () => {
    const pending = `owners-only-${acme.orgId.slice(0, 8)}.test`;
    expect((await put(acme, acmeProvider, acmeClient, { emailDomains: [acme.domain, pending] })).status).to.equal(200);
    const claim = await claimOf(t, acme, pending);
    dns.setTxt(claim.txtName, [claim.txtValue]);
    const tokens: [string, string][] = [['API key', acme.apiKey]];
    for (const role of ['viewer', 'member', 'admin']) tokens.push([role, (await addMember(t, acme, `${role}-${Date.now()}`, role)).token]);
    for (const [who, token] of tokens) {
      const r = await verifyCall(t, acme, pending, token);
      expect(r.status, `${who}: ${r.text}`).to.equal(403);
    }
    for (const token of [globex.ownerToken, globex.apiKey]) {
      expect((await verifyCall(t, acme, pending, token)).status, "another org's owner on this org").to.equal(404);
      expect((await t.call('GET', `/api/org/${acme.orgId}/sso`, { token })).status).to.equal(404);
    }
    const unclaimed = await verifyCall(t, globex, pending);
    expect(unclaimed.status, 'a domain its own org never claimed').to.equal(404);
    expect((await claimOf(t, acme, pending)).status, 'nobody verified it').to.equal('pending');
    expect((await verifyDomain(t, dns, acme, pending), (await claimOf(t, acme, pending)).status)).to.equal('verified');
  });

  it('answers a hostile domain with 400', async () => {
    const hostile = [
      '.x.test', 'a..b.test', '-x.test', 'x-.test', 'x.test.', '*.x.test', '_troupe-verification.x.test', 'x.test\u0000.evil.test',
      'x test.test', 'exämple.test', '127.0.0.1', 'localhost', 'x.test/../../sso', 'x.test;rm', `${'a'.repeat(64)}.test`, `${'a.'.repeat(127)}test`,
    ];
    for (const domain of hostile) {
      const r = await verifyCall(t, acme, domain);
      expect(r.status, `${JSON.stringify(domain)}: ${r.text}`).to.equal(400);
      expect(r.json.code).to.equal('VALIDATION_FAILED');
    }
  });
});

describe('single sign-on start per source (embedded engines)', function () {
  this.timeout(60_000);
  let t: TestNode;
  before(async () => {
    t = await startTestNode({ engines: 'embedded', config: { rateLimitSsoStartsPerSourcePerMinute: 3, trustProxyHops: 1 } });
  });
  after(() => t?.close());

  it('answers a source past its starts 429 with Retry-After, and another source goes on', async () => {
    const start = (address: string, email: string) => t.call('POST', '/api/auth/oidc/start', { body: { email }, headers: { 'x-forwarded-for': address } });
    for (let i = 0; i < 3; i += 1) expect((await start('203.0.113.7', `p${i}@unclaimed.test`)).status).to.equal(200);
    const limited = await start('203.0.113.7', 'another@elsewhere.test');
    expect(limited.status, limited.text).to.equal(429);
    expect(limited.json.code).to.equal('RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after')), 'Retry-After in whole seconds').to.be.within(1, 60);
    expect((await start('198.51.100.4', 'p0@unclaimed.test')).status, 'another address has its own count').to.equal(200);
  });
});
