// Invariant: a team runs its org from the console (issue 37 §2), each act through the existing API and each driven
// here in Chromium as the person would: members added, re-roled and removed, teams made and staffed; API keys and
// registration tokens created (their secret shown once, with Copy), listed and revoked, and what they unlock really
// unlocked and then refused; Linear and GitHub connected through their OAuth consent (a strict provider on loopback)
// and disconnected, a webhook secret stored; budgets set with spend shown against them. A role that may not act sees
// no control for it, the API's 403 is shown when the page is out of date, and each page is free of serious axe-core
// violations, console errors and failed requests, screenshotted at 1280 and 375 px.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { axeViolations, launchBrowser, screenshots, signIn, watchPage, type PageWatch } from '../../support/browser.js';
import { consoleOrg, PASSWORD, SimulatedWorker, type ConsoleOrg } from './world.js';
import { CLIENT_ID, CLIENT_SECRET, FakeOAuthProvider } from './fake-oauth-provider.js';

/** Until no part of the page says it is still loading. */
const loaded = (page: Page) => eventually(async () => (await page.locator('[role="status"]:has-text("Loading")').count()) === 0, 'the page loaded');

describe('administration in the console, in Chromium (embedded engines)', function () {
  this.timeout(120_000);
  let t: TestNode;
  let org: ConsoleOrg;
  let provider: FakeOAuthProvider;
  let browser: Browser;
  let admin: { email: string; userId: string; token: string };
  let viewer: { email: string; userId: string; token: string };
  const opened: { context: BrowserContext; watch: PageWatch }[] = [];

  async function person(role: 'admin' | 'viewer' | 'member') {
    const email = `${role}-${randomUUID().slice(0, 8)}@console.test`;
    const r = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email, role, password: PASSWORD } });
    expect(r.status, r.text).to.equal(201);
    return { email, userId: r.json.user.id as string, token: r.json.userToken as string };
  }

  before(async () => {
    provider = await FakeOAuthProvider.start();
    t = await startTestNode({
      engines: 'embedded',
      config: {
        outboundAllow: ['127.0.0.1'],
        linearOAuthBaseUrl: provider.url, linearOAuthClientId: CLIENT_ID, linearOAuthClientSecret: CLIENT_SECRET,
        githubOAuthBaseUrl: provider.url, githubOAuthClientId: CLIENT_ID, githubOAuthClientSecret: CLIENT_SECRET,
      },
    });
    org = await consoleOrg(t);
    admin = await person('admin');
    viewer = await person('viewer');
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await provider?.close();
  });
  afterEach(async function () {
    for (const { context, watch } of opened.splice(0)) {
      await context.close();
      if (this.currentTest?.state !== 'passed') continue;
      expect(watch.consoleErrors, 'console errors').to.deep.equal([]);
      expect(watch.failedRequests, 'failed requests').to.deep.equal([]);
      // The OAuth consent is the one other host a page goes to, on purpose.
      expect(watch.foreignRequests.filter((url) => !url.startsWith(`${provider.url}/`)), 'requests to other hosts').to.deep.equal([]);
    }
  });

  async function open(email: string): Promise<{ page: Page; watch: PageWatch; context: BrowserContext }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
    const page = await context.newPage();
    const watch = watchPage(page, t.url);
    opened.push({ context, watch });
    await signIn(page, t.url, email, PASSWORD);
    return { page, watch, context };
  }

  /** The page as it stands passes axe and is screenshotted at both widths, in the light scheme and the dark one. */
  async function check(page: Page, name: string): Promise<void> {
    await loaded(page);
    expect(await axeViolations(page), `axe on ${name}`).to.deep.equal([]);
    await screenshots(page, name);
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await axeViolations(page), `axe on ${name}, dark`).to.deep.equal([]);
    await screenshots(page, `${name}-dark`);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 375, height: 800 });
    const overflow = await page.evaluate('document.documentElement.scrollWidth') as number;
    expect(overflow, `${name} is ${overflow} px wide at 375`).to.be.at.most(376);
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  const clipboard = (page: Page) => page.evaluate('navigator.clipboard.readText()') as Promise<string>;

  it('adds a member who can then sign in, changes their role, removes them, and runs teams', async () => {
    const { page } = await open(org.owner.email);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { level: 1, name: 'Members' }).waitFor();
    await page.locator(`tr[data-member="${org.member.email}"]`).getByText(org.member.email).waitFor();

    const email = `grace-${randomUUID().slice(0, 6)}@console.test`;
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await page.getByLabel('First name (optional)').fill('Grace');
    await page.getByLabel('Initial password (optional, 8 characters or more)').fill(PASSWORD);
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByText(`${email} was added as member: they sign in with the password you set.`).waitFor();
    const row = page.locator(`tr[data-member="${email}"]`);
    await row.getByText('Grace').waitFor();
    const { page: theirs } = await open(email);
    await theirs.getByText(email).first().waitFor();

    await row.getByLabel(`Role of ${email}`).selectOption('viewer');
    await page.getByText(`Grace is now viewer.`).waitFor();
    const listed = await t.call('GET', `/api/org/${org.orgId}/members`, { token: org.owner.token });
    expect(listed.json.members.find((m: { user: { email: string } }) => m.user.email === email).role).to.equal('viewer');

    // Teams: create one, put the member on it, take them off.
    const teamName = `Platform ${randomUUID().slice(0, 4)}`;
    await page.getByLabel('New team').fill(teamName);
    await page.getByRole('button', { name: 'Create team' }).click();
    const team = page.locator(`li[data-team="${teamName}"]`);
    await team.getByRole('button', { name: `${teamName} (0 members)` }).click();
    await team.getByText('Nobody is on this team.').waitFor();
    await team.getByLabel(`Add to ${teamName}`).selectOption({ label: email });
    await team.getByRole('button', { name: 'Add', exact: true }).click();
    await team.getByRole('button', { name: `${teamName} (1 member)` }).waitFor();
    await team.getByRole('button', { name: `Take ${email} off` }).click();
    await check(page, 'settings-members');
    await team.getByRole('button', { name: `Take ${email} off ${teamName}` }).click();
    await team.getByText('Nobody is on this team.').waitFor();

    await row.getByRole('button', { name: 'Remove' }).click();
    await row.getByRole('button', { name: `Remove ${email}` }).click();
    await page.getByText('Grace was removed from', { exact: false }).waitFor();
    await eventually(async () => (await page.locator(`tr[data-member="${email}"]`).count()) === 0, 'the row is gone');
    const login = await t.call('POST', '/api/auth/login', { body: { email, password: PASSWORD } });
    expect(login.status, 'a removed member belongs to no org, so has nothing to sign in to').to.equal(401);
  });

  it('shows an admin no way to make an owner, and a viewer no controls at all while the API refuses them anyway', async () => {
    const { page } = await open(admin.email);
    await page.goto(`${t.url}/settings/members`);
    await loaded(page);
    const roles = await page.getByLabel('Role', { exact: true }).locator('option').evaluateAll((options) => options.map((o) => o.getAttribute('value')));
    expect(roles).to.deep.equal(['admin', 'member', 'viewer']);
    expect(await page.locator(`tr[data-member="${org.owner.email}"] select`).count(), 'no role control on an owner for an admin').to.equal(0);

    const { page: view } = await open(viewer.email);
    await view.goto(`${t.url}/settings/members`);
    await loaded(view);
    await view.locator(`tr[data-member="${org.owner.email}"]`).waitFor();
    expect(await view.getByRole('button', { name: 'Add member' }).count()).to.equal(0);
    expect(await view.getByRole('button', { name: 'Create team' }).count()).to.equal(0);
    expect(await view.locator('tbody select').count()).to.equal(0);
    expect(await view.getByRole('button', { name: 'Remove' }).count()).to.equal(0);
    await check(view, 'settings-members-viewer');
    for (const [path, note] of [['/settings/api-keys', 'issue, see and revoke API keys'], ['/settings/registration-tokens', 'issue, see and revoke registration tokens']] as const) {
      await view.goto(`${t.url}${path}`);
      await view.getByText(note, { exact: false }).waitFor();
      expect(await view.getByRole('button', { name: /^Create/ }).count()).to.equal(0);
    }
    await check(view, 'settings-api-keys-viewer');
    await view.goto(`${t.url}/settings/integrations`);
    await view.locator('li[data-integration="linear"]').getByText('Not connected.').waitFor();
    expect(await view.getByRole('button', { name: /Connect|Save/ }).count()).to.equal(0);
    await view.goto(`${t.url}/settings/budgets`);
    await view.getByText('Spent this month').waitFor();
    expect(await view.getByRole('button', { name: 'Save budget' }).count()).to.equal(0);
    await check(view, 'settings-budgets-viewer');

    for (const [method, path, body] of [
      ['POST', `/api/org/${org.orgId}/members`, { email: 'x@console.test', role: 'member' }],
      ['POST', `/api/org/${org.orgId}/keys`, { name: 'sneaky' }],
      ['POST', `/api/org/${org.orgId}/registration-tokens`, { name: 'sneaky' }],
      ['PUT', `/api/projects/${org.projectId}/budget`, { monthlyUsd: 1 }],
      ['POST', '/api/integrations/linear/oauth/authorize', undefined],
    ] as const) {
      const r = await t.call(method, path, { token: viewer.token, ...(body ? { body } : {}) });
      expect(r.status, `${method} ${path}`).to.equal(403);
    }
  });

  it('shows the API\'s refusal when the person lost the right while the page was open', async () => {
    const demoted = await person('admin');
    const { page, watch } = await open(demoted.email);
    await page.goto(`${t.url}/settings/api-keys`);
    await page.getByRole('button', { name: 'Create key' }).waitFor();
    const r = await t.call('PATCH', `/api/org/${org.orgId}/members/${demoted.userId}`, { token: org.owner.token, body: { role: 'member' } });
    expect(r.status, r.text).to.equal(200);
    watch.expectFailure(/\/keys: 403$/);
    watch.expectFailure(/403 \(Forbidden\)/);
    await page.getByLabel('Name', { exact: true }).fill('too late');
    await page.getByRole('button', { name: 'Create key' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Not created' });
    await alert.getByText('AUTHZ_DENIED').waitFor();
    const keys = await t.call('GET', `/api/org/${org.orgId}/keys`, { token: org.owner.token });
    expect(keys.json.keys.map((k: { name: string }) => k.name)).not.to.include('too late');
  });

  it('creates an API key shown once with Copy, which works until it is revoked', async () => {
    const { page } = await open(admin.email);
    await page.goto(`${t.url}/settings/api-keys`);
    await page.getByLabel('Name', { exact: true }).fill('CI deploys');
    await page.getByLabel('read: read everything the org has').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Your new key: CI deploys' }).waitFor();
    const fullKey = await page.getByLabel('API key', { exact: true }).inputValue();
    expect(fullKey).to.match(/^trp_[0-9A-Za-z]{40}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied.').waitFor();
    expect(await clipboard(page)).to.equal(fullKey);
    const me = await t.call('GET', '/api/cli/whoami', { token: fullKey });
    expect(me.status).to.equal(200);
    expect(me.json.scopes).to.deep.equal(['read']);
    const row = page.locator('tr[data-key="CI deploys"]');
    await row.getByText('read', { exact: true }).waitFor();
    await check(page, 'settings-api-keys');

    await page.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.getByText(fullKey).count(), 'the key is not shown again').to.equal(0);
    await page.reload();
    expect(await page.content()).not.to.contain(fullKey);
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Revoke CI deploys' }).click();
    await page.getByText('CI deploys was revoked: it no longer works.').waitFor();
    await row.getByText('revoked').waitFor();
    expect((await t.call('GET', '/api/cli/whoami', { token: fullKey })).status).to.equal(401);
  });

  it('is driven by keyboard alone: a key created, copied and revoked without the mouse', async () => {
    const { page } = await open(org.owner.email);
    await page.goto(`${t.url}/settings/api-keys`);
    await page.getByRole('button', { name: 'Create key' }).waitFor();
    // From the skip link, Tab reaches the form's first field through the tab strip.
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).to.equal('Skip to content');
    const focused = () => page.evaluate("document.activeElement?.id || document.activeElement?.textContent || ''") as Promise<string>;
    for (let i = 0; i < 40 && (await focused()) !== 'key-name'; i++) await page.keyboard.press('Tab');
    expect(await focused()).to.equal('key-name');
    await page.keyboard.type('keyboard key');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Your new key: keyboard key' }).waitFor();
    const fullKey = await page.getByLabel('API key', { exact: true }).inputValue();
    for (let i = 0; i < 40 && (await focused()) !== 'Copy'; i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText('Copied.').waitFor();
    expect(await clipboard(page)).to.equal(fullKey);

    const row = page.locator('tr[data-key="keyboard key"]');
    await row.getByRole('button', { name: 'Revoke' }).focus();
    await page.keyboard.press('Enter');
    // The confirmation takes the focus, and Cancel gives it back to the button that asked.
    const focusOn = (text: string) => eventually(async () => (await focused()) === text, `focus on ${text}`);
    await focusOn('Revoke keyboard key');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await focusOn('Revoke');
    await page.keyboard.press('Enter');
    await focusOn('Revoke keyboard key');
    await page.keyboard.press('Enter');
    await row.getByText('revoked').waitFor();
    expect((await t.call('GET', '/api/cli/whoami', { token: fullKey })).status).to.equal(401);
  });

  it('creates a registration token with a copyable troupe-worker command line a worker joins with, until revoked', async () => {
    const { page } = await open(org.owner.email);
    await page.goto(`${t.url}/settings/registration-tokens`);
    await page.getByRole('heading', { level: 1, name: 'Workers' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('build farm');
    await page.getByLabel('default').check();
    await page.getByRole('button', { name: 'Create registration token' }).click();
    await page.getByRole('heading', { name: 'Your new registration token: build farm' }).waitFor();
    const token = await page.getByLabel('Registration token', { exact: true }).inputValue();
    expect(token).to.match(/^trg_[0-9A-Za-z]{40}$/);
    const command = page.getByLabel(/^Run this on the worker machine/);
    expect(await command.inputValue()).to.equal(`TROUPE_REGISTRATION_TOKEN=${token} troupe-worker --url ${t.url} --agent claude-code`);
    await page.getByLabel('The agent the worker runs').selectOption('command');
    await page.getByLabel('Its shell command').fill("node agent.mjs --say 'hi'");
    expect(await command.inputValue()).to.equal(`TROUPE_REGISTRATION_TOKEN=${token} troupe-worker --url ${t.url} --agent-command 'node agent.mjs --say '\\''hi'\\'''`);
    await page.locator('.copy-field').filter({ has: command }).getByRole('button', { name: 'Copy' }).click();
    expect(await clipboard(page)).to.equal(await command.inputValue());
    const row = page.locator('tr[data-token="build farm"]');
    await row.getByText('default').waitFor();
    await check(page, 'settings-registration-tokens');

    const joined = await t.call('POST', '/v1/daemon/register', { body: { registrationToken: token, hostname: 'farm-1', maxAgents: 2 } });
    expect(joined.status, joined.text).to.equal(200);
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Revoke build farm' }).click();
    await row.getByText('revoked').waitFor();
    const refused = await t.call('POST', '/v1/daemon/register', { body: { registrationToken: token, hostname: 'farm-2', maxAgents: 2 } });
    expect(refused.status).to.equal(401);
  });

  it('connects Linear and GitHub through their OAuth consent, disconnects one, and stores a webhook secret', async () => {
    const { page } = await open(org.owner.email);
    await page.goto(`${t.url}/settings/integrations`);
    const linear = page.locator('li[data-integration="linear"]');
    await linear.getByText('Not connected.').waitFor();
    const sentry = page.locator('li[data-integration="sentry"]');
    await sentry.getByText('This deployment has no Sentry OAuth app', { exact: false }).waitFor();
    expect(await sentry.getByRole('button').count()).to.equal(0);

    await linear.getByRole('button', { name: 'Connect Linear' }).click();
    await page.waitForURL((url) => url.pathname === '/settings/integrations' && url.searchParams.get('connected') === 'linear');
    await page.getByText('Linear is connected.').waitFor();
    await linear.getByText('Connected', { exact: true }).waitFor();
    const github = page.locator('li[data-integration="github"]');
    await github.getByRole('button', { name: 'Connect GitHub' }).click();
    await page.getByText('GitHub is connected.').waitFor();
    await github.getByText('Connected', { exact: true }).waitFor();
    expect(provider.consents).to.deep.equal(['/oauth/authorize', '/login/oauth/authorize']);
    const stored = await t.call('GET', `/api/org/${org.orgId}/integrations`, { token: org.owner.token });
    expect(stored.json.oauth.filter((o: { connection: unknown }) => o.connection !== null).map((o: { provider: string }) => o.provider)).to.deep.equal(['linear', 'github']);

    // A webhook secret for GitHub, and its URL to paste there.
    const hook = page.locator('li[data-webhook="github"]');
    expect(await hook.getByLabel('GitHub webhook URL').inputValue()).to.equal(`${t.url}/api/webhooks/ingest/github?org=${org.orgId}`);
    await hook.getByLabel('Signing secret').fill('whsec-console-0123456789');
    await hook.getByRole('button', { name: 'Save GitHub secret' }).click();
    await hook.getByText('Signing secret stored').waitFor();
    await check(page, 'settings-integrations');

    await linear.getByRole('button', { name: 'Disconnect Linear' }).click();
    await linear.getByRole('button', { name: 'Yes, disconnect Linear' }).click();
    await linear.getByText('Not connected.').waitFor();
    const after = await t.call('GET', `/api/org/${org.orgId}/integrations`, { token: org.owner.token });
    expect(after.json.oauth.find((o: { provider: string }) => o.provider === 'linear').connection).to.equal(null);
    expect(after.json.webhooks.find((w: { provider: string }) => w.provider === 'github').connected).to.equal(true);
  });

  it('brings the person back with the reason when the connection fails', async () => {
    const { page } = await open(org.owner.email);
    await page.goto(`${t.url}/api/integrations/linear/oauth/callback?state=forged-state&code=whatever`);
    await page.waitForURL((url) => url.pathname === '/settings/integrations');
    await page.getByRole('alert').getByText('state: unknown, already used, or issued to someone else').waitFor();
    await page.getByText('Linear was not connected:').waitFor();
  });

  it('sets the monthly and per-session budgets and shows spend against them', async () => {
    const worker = await SimulatedWorker.register(t, org, 'budget-box');
    const dispatched = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Spend a little' } });
    expect(dispatched.status, dispatched.text).to.equal(201);
    const id = dispatched.json.sessionId as string;
    await worker.claim(id);
    await worker.move(id, 'running');
    await worker.move(id, 'finalizing');
    await worker.move(id, 'completed', { costUsd: 0.42 });

    const { page } = await open(admin.email);
    await page.goto(`${t.url}/settings/budgets`);
    await page.locator('[data-spent]').getByText('$0.4200').waitFor();
    await page.getByLabel('Monthly budget (USD)').fill('5');
    await page.getByLabel('Per-session budget (USD)').fill('1.5');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.getByText('Saved.').waitFor();
    await page.locator('[data-spent]').getByText('$0.4200 of $5.00').waitFor();
    const budget = await t.call('GET', `/api/projects/${org.projectId}/budget`, { token: org.owner.token });
    expect(budget.json).to.include({ monthlyUsd: 5, perSessionUsd: 1.5, spentThisMonthUsd: 0.42 });
    expect(Number(await page.locator('meter.budget-meter').getAttribute('value'))).to.equal(0.42);
    await check(page, 'settings-budgets');

    // A budget already spent says so; clearing the monthly one lifts it.
    await page.getByLabel('Monthly budget (USD)').fill('0.4');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.getByText('The monthly budget is spent', { exact: false }).waitFor();
    await page.getByLabel('Monthly budget (USD)').fill('');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await eventually(async () => (await page.getByText('The monthly budget is spent', { exact: false }).count()) === 0, 'the warning went');
    const cleared = await t.call('GET', `/api/projects/${org.projectId}/budget`, { token: org.owner.token });
    expect(cleared.json).to.include({ monthlyUsd: null, perSessionUsd: 1.5 });
  });
});
