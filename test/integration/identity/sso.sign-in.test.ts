// Invariant: single sign-on at an org's OpenID provider (a real oidc-provider on loopback) signs a person in with the
// same session cookie as a password, provisions them on first sign-in and sets their role from the groups claim at
// every sign-in (an owner is never demoted by a missing claim); a wrong or foreign state, a replayed code and an ID
// token from another issuer or for another client are refused with nothing provisioned; with `enforce`, passwords
// stop working for the org's domains; sign-ins, provisioning, role changes and refusals are in the audit chain.
import { expect } from 'chai';
import { engineSets, startTestNode, type TestNode } from '../../support/node.js';
import { TestOidcProvider, type OidcClient } from '../../support/oidc-provider.js';
import { TestDnsServer } from '../../support/dns-server.js';
import {
  PASSWORD, chainOf, finishSignIn, provisionSsoOrg, nodeClient, roleWithCookie, signInWithSso, startSignIn, verifyDomain, type SsoOrg,
} from './sso-world.js';

for (const { set, skip } of engineSets) describe(`single sign-on (${set} engines)`, function () {
  if (skip) return;
  this.timeout(90_000);
  let t: TestNode;
  let acme: SsoOrg;
  let client: OidcClient;
  const otherClient: OidcClient = { clientId: 'someone-else', clientSecret: 'another-secret-of-32-characters-x', redirectUris: ['http://127.0.0.1:9/cb'] };
  let provider: TestOidcProvider;
  let elsewhere: TestOidcProvider;
  let dns: TestDnsServer;
  const put = (body: Record<string, unknown> = {}) => t.call('PUT', `/api/org/${acme.orgId}/sso`, {
    token: acme.ownerToken,
    body: {
      issuer: provider.issuer, clientId: client.clientId, clientSecret: client.clientSecret, emailDomains: [acme.domain],
      roleMap: { 'eng-admins': 'admin', engineers: 'member', observers: 'viewer' }, ...body,
    },
  });
  const usersNamed = async (email: string) => (await t.node.deps.db('users').where({ email })).length;

  before(async () => {
    dns = await TestDnsServer.start();
    // Every start of this suite comes from one address; the per-source limit has its own test (sso.domains.test.ts).
    t = await startTestNode({ engines: set, config: { outboundAllow: ['127.0.0.1'], ssoDnsServers: [dns.address], rateLimitSsoStartsPerSourcePerMinute: 1_000 } });
    acme = await provisionSsoOrg(t, 'Acme');
    client = nodeClient(t);
    provider = await TestOidcProvider.start([client, otherClient]);
    elsewhere = await TestOidcProvider.start([client]);
    const r = await put();
    expect(r.status, r.text).to.equal(200);
    await verifyDomain(t, dns, acme);
  });
  after(async () => {
    await t?.close();
    await dns?.close();
    await provider?.close();
    await elsewhere?.close();
  });

  it('provisions on first sign-in with the mapped role, sets the password session cookie, and follows a changed group', async () => {
    const email = `ada@${acme.domain}`;
    provider.setAccount({ email, givenName: 'Ada', familyName: 'Lovelace', picture: 'https://pictures.example/ada.png', groups: ['engineers', 'eng-admins'] });
    const started = await startSignIn(t, email, '/workflows');
    const back = await provider.authorize(started.authorizationUrl, email);
    const first = await finishSignIn(t, back, started.browserCookie);
    expect(first.status, JSON.stringify(first.json)).to.equal(200);
    expect(first.location).to.equal('/workflows');
    expect(first.sessionCookie).to.match(/^troupe_session=ey/);
    expect(await roleWithCookie(t, first.sessionCookie!)).to.deep.include({
      role: 'admin', email, firstName: 'Ada', lastName: 'Lovelace', profilePictureUrl: 'https://pictures.example/ada.png',
    });

    provider.setAccount({ email, givenName: 'Augusta', groups: ['observers'] });
    const second = await signInWithSso(t, provider, email);
    expect(second.status, JSON.stringify(second.json)).to.equal(200);
    // The role follows the group; the names stay what the person was provisioned with.
    expect(await roleWithCookie(t, second.sessionCookie!)).to.deep.include({ role: 'viewer', firstName: 'Ada' });
    // The first session acts at the new role at once (the membership's memo was dropped).
    expect((await roleWithCookie(t, first.sessionCookie!)).role).to.equal('viewer');

    provider.setAccount({ email, groups: ['unmapped-group'] });
    const third = await signInWithSso(t, provider, email);
    expect((await roleWithCookie(t, third.sessionCookie!)).role, 'no group maps: the default role').to.equal('member');

    const chain = await chainOf(t, acme.ownerToken);
    const userId = (await t.node.deps.db('users').where({ email }).first()).id as string;
    const mine = chain.filter((e) => e.subject === userId);
    expect(mine.map((e) => e.type)).to.deep.equal(['member.provisioned', 'auth.sso_login', 'member.role_changed', 'auth.sso_login', 'member.role_changed', 'auth.sso_login']);
    expect(mine[0]!.payload).to.deep.include({ role: 'admin', userCreated: true, issuer: provider.issuer });
    expect(mine[2]!.payload).to.deep.include({ from: 'admin', to: 'viewer' });
    expect(mine[1]).to.deep.include({ actor: `user:${userId}` });
  });

  it('never demotes an owner for a missing claim, nor the only owner at all', async () => {
    provider.setAccount({ email: acme.ownerEmail, omitGroups: true });
    const missing = await signInWithSso(t, provider, acme.ownerEmail);
    expect(missing.status, JSON.stringify(missing.json)).to.equal(200);
    expect((await roleWithCookie(t, missing.sessionCookie!)).role).to.equal('owner');
    provider.setAccount({ email: acme.ownerEmail, groups: ['observers'] });
    const mapped = await signInWithSso(t, provider, acme.ownerEmail);
    expect((await roleWithCookie(t, mapped.sessionCookie!)).role, 'the only owner').to.equal('owner');
  });

  it('refuses a wrong state, a state from another browser, and a replayed code, provisioning no one', async () => {
    const email = `eve@${acme.domain}`;
    provider.setAccount({ email, groups: ['engineers'] });
    const started = await startSignIn(t, email);
    const back = await provider.authorize(started.authorizationUrl, email);

    const wrong = new URL(back);
    wrong.searchParams.set('state', 'not-the-state');
    const wrongState = await finishSignIn(t, wrong, started.browserCookie);
    expect(wrongState.status, JSON.stringify(wrongState.json)).to.equal(400);
    expect(wrongState.json).to.include({ code: 'VALIDATION_FAILED' });
    expect(wrongState.sessionCookie).to.equal(undefined);

    const otherBrowser = await finishSignIn(t, back, undefined);
    expect(otherBrowser.status).to.equal(400);
    const anotherCookie = await finishSignIn(t, back, 'troupe_oidc=someone-elses');
    expect(anotherCookie.status).to.equal(400);
    expect(await usersNamed(email), 'nobody provisioned yet').to.equal(0);

    // The right browser still finishes: a refused attempt did not use its state up.
    const done = await finishSignIn(t, back, started.browserCookie);
    expect(done.status, JSON.stringify(done.json)).to.equal(200);

    const replayed = await finishSignIn(t, back, started.browserCookie);
    expect(replayed.status, 'the same state again').to.equal(400);
    expect(replayed.sessionCookie).to.equal(undefined);

    // The used code under a fresh state of this browser: the provider refuses it.
    const fresh = await startSignIn(t, email);
    const again = new URL(back);
    again.searchParams.set('state', new URL(fresh.authorizationUrl).searchParams.get('state')!);
    const reused = await finishSignIn(t, again, fresh.browserCookie);
    expect(reused.status, JSON.stringify(reused.json)).to.equal(401);
    expect(reused.json).to.include({ code: 'AUTH_INVALID' });
    expect(reused.json.error).to.include('invalid_grant');
    expect(reused.sessionCookie).to.equal(undefined);
  });

  it('refuses an ID token from another issuer or for another client', async () => {
    const cases: [string, (nonce: string, email: string) => Promise<string>, RegExp][] = [
      ['another issuer', (nonce, email) => elsewhere.idTokenFor(client, email, nonce), /"iss" \(issuer\)/],
      ['another client', (nonce, email) => provider.idTokenFor(otherClient, email, nonce), /"aud" \(audience\)/],
    ];
    for (const [what, forge, reason] of cases) {
      const email = `mallory-${what.replace(/\W/g, '')}@${acme.domain}`;
      provider.setAccount({ email, groups: ['eng-admins'] });
      elsewhere.setAccount({ email, groups: ['eng-admins'] });
      const started = await startSignIn(t, email);
      // The token the node will be handed carries the very nonce its sign-in expects: only issuer or audience differ.
      const idToken = await forge(started.nonce, email);
      const back = await provider.authorize(started.authorizationUrl, email);
      provider.replaceNextIdToken(idToken);
      const refused = await finishSignIn(t, back, started.browserCookie);
      expect(refused.status, `${what}: ${JSON.stringify(refused.json)}`).to.equal(401);
      expect(refused.json, what).to.include({ code: 'AUTH_INVALID' });
      expect(refused.json.error, what).to.match(reason);
      expect(refused.sessionCookie, what).to.equal(undefined);
      expect(await usersNamed(email), `${what}: nobody provisioned`).to.equal(0);
    }
    const failures = (await chainOf(t, acme.ownerToken)).filter((e) => e.type === 'auth.sso_failed');
    expect(failures.length).to.be.at.least(2);
  });

  it('refuses an email outside the org\'s verified domains and, with no default role, a person no group maps', async () => {
    const stranger = 'someone@not-acme.test';
    provider.setAccount({ email: stranger, groups: ['eng-admins'] });
    // The provider vouches for an email of a domain the org never claimed (its sign-in started with one it did).
    const started = await startSignIn(t, `someone@${acme.domain}`);
    const refused = await finishSignIn(t, await provider.authorize(started.authorizationUrl, stranger), started.browserCookie);
    expect(refused.status, JSON.stringify(refused.json)).to.equal(403);
    expect(await usersNamed(stranger)).to.equal(0);

    // A domain the org claimed but has not verified is vouched for by nobody either.
    const unproven = `pending-${acme.domain}`;
    expect((await put({ emailDomains: [acme.domain, unproven] })).status).to.equal(200);
    const pendingEmail = `someone@${unproven}`;
    provider.setAccount({ email: pendingEmail, groups: ['eng-admins'] });
    const viaVerified = await startSignIn(t, `someone@${acme.domain}`);
    const unverified = await finishSignIn(t, await provider.authorize(viaVerified.authorizationUrl, pendingEmail), viaVerified.browserCookie);
    expect(unverified.status, JSON.stringify(unverified.json)).to.equal(403);
    expect(unverified.json.error).to.include('verified single sign-on domains');
    expect(await usersNamed(pendingEmail)).to.equal(0);

    expect((await put({ defaultRole: null })).status).to.equal(200);
    const email = `nogroup@${acme.domain}`;
    provider.setAccount({ email, groups: ['cooks'] });
    const none = await signInWithSso(t, provider, email);
    expect(none.status, JSON.stringify(none.json)).to.equal(403);
    expect(await usersNamed(email)).to.equal(0);
    expect((await put()).status).to.equal(200);
  });

  it('sends a browser back to the sign-in page with the refusal code', async () => {
    const email = `browser@${acme.domain}`;
    const started = await startSignIn(t, email);
    provider.setAccount({ email });
    const back = new URL(await provider.authorize(started.authorizationUrl, email));
    back.searchParams.set('state', 'forged');
    const r = await finishSignIn(t, back, started.browserCookie, 'text/html,application/xhtml+xml');
    expect(r.status).to.equal(303);
    expect(r.location).to.equal('/sign-in?ssoError=VALIDATION_FAILED');
  });

  it('stops passwords for the org\'s domain with enforce, and not for an unknown domain', async () => {
    const login = (email: string) => t.call('POST', '/api/auth/login', { body: { email, password: PASSWORD } });
    expect((await login(acme.ownerEmail)).status, 'not enforced yet').to.equal(200);
    expect((await put({ enforce: true })).status).to.equal(200);
    const refused = await login(acme.ownerEmail);
    expect(refused.status, refused.text).to.equal(403);
    expect(refused.json.code).to.equal('SSO_REQUIRED');
    expect(refused.headers.getSetCookie().some((c) => c.startsWith('troupe_session=ey'))).to.equal(false);
    const unknown = await t.call('POST', '/api/auth/login', { body: { email: 'nobody@nowhere.test', password: PASSWORD } });
    expect(unknown.status).to.equal(401);
    const stillSso = await signInWithSso(t, provider, acme.ownerEmail);
    expect(stillSso.status).to.equal(200);
    expect((await put({ enforce: false })).status).to.equal(200);
    expect((await login(acme.ownerEmail)).status, 'enforce lifted').to.equal(200);
  });

  it('gives a domain claim no reach into another org: its provider signs in none of that org\'s people, and enforce locks none out', async () => {
    // Someone of the verified domain whose account is in another org: proving the domain gives its provider no reach
    // into the orgs its people already belong to.
    const email = `bob@${acme.domain}`;
    const other = await t.call('POST', '/api/admin/orgs', { token: t.adminToken, body: { name: 'Elsewhere', owner: { email, password: PASSWORD } } });
    expect(other.status, other.text).to.equal(201);
    provider.setAccount({ email, groups: ['eng-admins'] });
    const impersonated = await signInWithSso(t, provider, email);
    expect(impersonated.status, JSON.stringify(impersonated.json)).to.equal(403);
    expect(impersonated.sessionCookie).to.equal(undefined);
    const bob = (await t.node.deps.db('users').where({ email }).first()).id as string;
    expect(await t.node.deps.db('org_memberships').where({ org_id: acme.orgId, user_id: bob }).first(), 'not made a member').to.equal(undefined);

    expect((await put({ enforce: true })).status).to.equal(200);
    const login = (body: Record<string, unknown>) => t.call('POST', '/api/auth/login', { body });
    const ownOrg = await login({ email, password: PASSWORD });
    expect(ownOrg.status, `enforce is the claiming org's alone: ${ownOrg.text}`).to.equal(200);
    expect(ownOrg.json.orgId).to.equal(other.json.org.id);
    // Only a right password into the enforcing org hears SSO_REQUIRED: a wrong one is the usual 401, telling nothing.
    expect((await login({ email: acme.ownerEmail, password: 'not the password' })).status).to.equal(401);
    expect((await login({ email: acme.ownerEmail, password: PASSWORD })).json.code).to.equal('SSO_REQUIRED');
    expect((await put({ enforce: false })).status).to.equal(200);
  });

  it('links only an email the provider says it verified', async () => {
    const email = `unverified@${acme.domain}`;
    provider.setAccount({ email, groups: ['engineers'], omitEmailVerified: true });
    const refused = await signInWithSso(t, provider, email);
    expect(refused.status, JSON.stringify(refused.json)).to.equal(403);
    expect(await usersNamed(email)).to.equal(0);
  });

  it('lands only on a path of this node, whatever `next` the sign-in started with', async () => {
    const email = `wanderer@${acme.domain}`;
    provider.setAccount({ email, groups: ['engineers'] });
    for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example', '/sessions?x=\u00e9']) {
      const started = await startSignIn(t, email, next);
      const done = await finishSignIn(t, await provider.authorize(started.authorizationUrl, email), started.browserCookie);
      expect(done.status, next).to.equal(200);
      expect(done.location, next).to.equal('/');
    }
  });

  it('answers sso: false for a domain no org claimed, with no cookie', async () => {
    const r = await t.call('POST', '/api/auth/oidc/start', { body: { email: 'person@unclaimed.test' } });
    expect(r.status).to.equal(200);
    expect(r.json).to.deep.equal({ sso: false });
    expect(r.headers.getSetCookie()).to.deep.equal([]);
  });
});
