// Invariant: a person of an org with single sign-on signs in to the console in Chromium by typing only their email:
// the page sends them to the org's OpenID provider (a real oidc-provider on loopback), whose sign-in form they fill,
// and they come back signed in with the session cookie; their first sign-in provisions them with the role their
// group maps to, and a changed group changes the role at the next sign-in. A refused return shows on the sign-in
// page, and a person of a domain without single sign-on still signs in with their password.
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestNode, type TestNode } from '../../support/node.js';
import { axeViolations, darkViolations, launchBrowser, screenshots, signIn, watchPage, type PageWatch } from '../../support/browser.js';
import { TestOidcProvider, type OidcClient } from '../../support/oidc-provider.js';
import { TestDnsServer } from '../../support/dns-server.js';
import { nodeClient, PASSWORD, provisionSsoOrg, roleWithCookie, verifyDomain, type SsoOrg } from '../identity/sso-world.js';

describe('single sign-on in the console (Chromium, embedded engines)', function () {
  this.timeout(90_000);
  let t: TestNode;
  let acme: SsoOrg;
  let plain: SsoOrg;
  let client: OidcClient;
  let provider: TestOidcProvider;
  let browser: Browser;
  let dns: TestDnsServer;
  const opened: { context: BrowserContext; watch: PageWatch }[] = [];

  before(async () => {
    dns = await TestDnsServer.start();
    t = await startTestNode({ engines: 'embedded', config: { outboundAllow: ['127.0.0.1'], ssoDnsServers: [dns.address] } });
    acme = await provisionSsoOrg(t, 'Acme');
    plain = await provisionSsoOrg(t, 'Plain');
    client = nodeClient(t);
    provider = await TestOidcProvider.start([client]);
    const put = await t.call('PUT', `/api/org/${acme.orgId}/sso`, {
      token: acme.ownerToken,
      body: { issuer: provider.issuer, clientId: client.clientId, clientSecret: client.clientSecret, emailDomains: [acme.domain], roleMap: { 'eng-admins': 'admin', observers: 'viewer' } },
    });
    expect(put.status, put.text).to.equal(200);
    await verifyDomain(t, dns, acme);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await provider?.close();
    await dns?.close();
  });
  afterEach(async function () {
    for (const { context, watch } of opened.splice(0)) {
      await context.close();
      if (this.currentTest?.state !== 'passed') continue;
      expect(watch.consoleErrors, 'console errors').to.deep.equal([]);
      expect(watch.failedRequests, 'failed requests').to.deep.equal([]);
      // The provider is the one other host a single sign-on visits.
      expect(watch.foreignRequests.filter((url) => !url.startsWith(`${provider.issuer}/`)), 'requests to other hosts').to.deep.equal([]);
    }
  });

  async function fresh(): Promise<{ page: Page; context: BrowserContext; watch: PageWatch }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const watch = watchPage(page, t.url);
    opened.push({ context, watch });
    return { page, context, watch };
  }

  /** Email only on the console's form, then the provider's own form, then back to the console. */
  async function ssoSignIn(page: Page, email: string, path = '/sign-in'): Promise<void> {
    await page.goto(`${t.url}${path}`);
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.href.startsWith(provider.issuer));
    await page.getByLabel('Provider email').fill(email);
    await page.getByRole('button', { name: 'Sign in at the provider' }).click();
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
  }

  const sessionCookieOf = async (context: BrowserContext) => {
    const cookie = (await context.cookies()).find((c) => c.name === 'troupe_session');
    expect(cookie, 'troupe_session').to.include({ httpOnly: true, sameSite: 'Lax' });
    return `troupe_session=${cookie!.value}`;
  };

  it('provisions a first sign-in with the mapped role, and a changed group changes the role at the next', async () => {
    const email = `grace@${acme.domain}`;
    provider.setAccount({ email, givenName: 'Grace', familyName: 'Hopper', groups: ['eng-admins'] });
    const first = await fresh();
    await ssoSignIn(first.page, email, '/fleet');
    expect(new URL(first.page.url()).pathname, 'back where the sign-in started').to.equal('/fleet');
    await first.page.getByText(email).waitFor();
    await screenshots(first.page, 'sso-signed-in');
    expect(await roleWithCookie(t, await sessionCookieOf(first.context))).to.deep.include({ role: 'admin', firstName: 'Grace', lastName: 'Hopper' });

    provider.setAccount({ email, givenName: 'Grace', groups: ['observers'] });
    const second = await fresh();
    await ssoSignIn(second.page, email);
    expect((await roleWithCookie(t, await sessionCookieOf(second.context))).role).to.equal('viewer');
  });

  it('shows a refused return on the sign-in page', async () => {
    const { page, watch } = await fresh();
    watch.expectFailure(/\/auth\/oidc\/callback/);
    await page.goto(`${t.url}/auth/oidc/callback?state=forged&code=forged`);
    await page.waitForURL((url) => url.pathname === '/sign-in');
    await page.getByRole('alert').getByText('started in another window').waitFor();
    expect(await axeViolations(page), 'axe: serious or critical').to.deep.equal([]);
    await screenshots(page, 'sso-refused');
    expect(await darkViolations(page, 'sso-refused'), 'axe in dark: serious or critical').to.deep.equal([]);
  });

  it("shows an owner each domain's TXT record, says what a failed verification found, and verifies it", async () => {
    const proving = await provisionSsoOrg(t, 'Proving');
    const put = await t.call('PUT', `/api/org/${proving.orgId}/sso`, {
      token: proving.ownerToken,
      body: { issuer: provider.issuer, clientId: client.clientId, clientSecret: client.clientSecret, emailDomains: [proving.domain] },
    });
    expect(put.status, put.text).to.equal(200);
    const { txtName, txtValue } = put.json.domains[0];
    const { page, watch } = await fresh();
    watch.expectFailure(/\/sso\/domains\/.*\/verify/);
    await signIn(page, t.url, proving.ownerEmail, PASSWORD);
    await page.goto(`${t.url}/settings/members`);
    await page.getByText('Single sign-on', { exact: true }).click();
    const claim = page.locator(`[data-domain="${proving.domain}"]`);
    await claim.getByText('not verified').waitFor();
    expect(await claim.getByLabel('TXT record name').inputValue()).to.equal(txtName);
    expect(await claim.getByLabel('TXT record value').inputValue()).to.equal(txtValue);

    await claim.getByRole('button', { name: `Verify ${proving.domain}` }).click();
    await claim.getByRole('alert').getByText(`no TXT record at ${txtName}`).waitFor();
    expect(await axeViolations(page), 'axe: serious or critical').to.deep.equal([]);
    await screenshots(page, 'sso-domain-pending');
    expect(await darkViolations(page, 'sso-domain-pending'), 'axe in dark: serious or critical').to.deep.equal([]);

    dns.setTxt(txtName, [txtValue]);
    await claim.getByRole('button', { name: `Verify ${proving.domain}` }).click();
    await claim.getByText('verified', { exact: true }).waitFor();
    expect(await claim.getByLabel('TXT record value').count(), 'the record is no longer asked for').to.equal(0);
    expect((await t.call('POST', '/api/auth/oidc/start', { body: { email: `someone@${proving.domain}` } })).json.sso).to.equal(true);
  });

  it('keeps the password for a domain without single sign-on', async () => {
    const { page } = await fresh();
    await signIn(page, t.url, plain.ownerEmail, PASSWORD);
    await page.getByText(plain.ownerEmail).waitFor();
  });
});
