// Invariant (issue 34): a person chooses in the console what an agent works on and sees what it did there. The
// project's repositories are listed, added and removed (refusals shown with the server's words, nothing of another
// org's), a dispatch names a repository, ref and agent only when chosen, and a session's page shows the agent, its
// tokens and cost, the branch, commits and diffstat, its tool steps and the pull request, every string as text and
// a link only to https. Chromium drives the pages; the node is driven over HTTP as workers and scripts drive it.
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { launchBrowser, signIn, watchPage, type PageWatch } from '../../support/browser.js';
import { consoleOrg, PASSWORD, SimulatedWorker, workspaceReport, type ConsoleOrg } from './world.js';

const HOSTILE = '<img src=x onerror=alert(1)>';

describe('the console on code: repositories, dispatch on a ref, the agent\'s work (embedded engines)', function () {
  this.timeout(60_000);
  let t: TestNode;
  let org: ConsoleOrg;
  let browser: Browser;
  const opened: { context: BrowserContext; watch: PageWatch }[] = [];

  before(async () => {
    t = await startTestNode({ engines: 'embedded' });
    org = await consoleOrg(t);
    // Another org with a repository of its own: nothing of it may reach this org's pages.
    const globex = await consoleOrg(t, 'Globex');
    const theirs = await t.call('POST', `/api/projects/${globex.projectId}/repositories`, { token: globex.owner.token, body: { url: 'https://github.com/globex/secret-plans.git' } });
    expect(theirs.status, theirs.text).to.equal(201);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });
  afterEach(async function () {
    for (const { context, watch } of opened.splice(0)) {
      await context.close();
      if (this.currentTest?.state !== 'passed') continue;
      expect(watch.consoleErrors, 'console errors').to.deep.equal([]);
      expect(watch.failedRequests, 'failed requests').to.deep.equal([]);
      expect(watch.foreignRequests, 'requests to other hosts').to.deep.equal([]);
    }
  });

  async function open(email: string): Promise<{ page: Page; watch: PageWatch; dialogs: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const watch = watchPage(page, t.url);
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => { dialogs.push(dialog.message()); void dialog.dismiss(); });
    opened.push({ context, watch });
    await signIn(page, t.url, email, PASSWORD);
    return { page, watch, dialogs };
  }

  async function addRepository(name: string, url: string, extra: Record<string, unknown> = {}): Promise<{ id: string; url: string; name: string; defaultBranch: string }> {
    const r = await t.call('POST', `/api/projects/${org.projectId}/repositories`, { token: org.owner.token, body: { url, name, ...extra } });
    expect(r.status, r.text).to.equal(201);
    return r.json;
  }
  const repositoryNames = async () =>
    ((await t.call('GET', `/api/projects/${org.projectId}/repositories`, { token: org.owner.token })).json.repositories as { name: string }[]).map((r) => r.name);
  const detail = async (id: string) => (await t.call('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json;
  const repositoriesOf = (page: Page) => page.locator('section', { has: page.getByRole('heading', { name: 'Repositories', exact: true }) });
  const member = async (role: string) => {
    const email = `${role}-${Date.now()}-${Math.random().toString(36).slice(2, 6)}@console.test`;
    const r = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email, role, password: PASSWORD } });
    expect(r.status, r.text).to.equal(201);
    return email;
  };

  it('adds and removes repositories through the form, shows 400 and 409 with their messages, and never another org\'s', async () => {
    const { page, watch } = await open(org.member.email);
    const section = repositoriesOf(page);
    await section.getByRole('button', { name: 'Add repository' }).waitFor();
    await section.getByLabel('URL', { exact: true }).fill('https://github.com/acme/app.git');
    await section.getByLabel('Default branch (optional)').fill('trunk');
    await section.getByRole('button', { name: 'Add repository' }).click();
    await section.getByText('Added app.').waitFor();
    const app = section.locator('li', { hasText: 'https://github.com/acme/app.git' });
    await app.getByText('trunk', { exact: true }).waitFor();
    // The dispatch form beside it offers the new repository at once.
    await eventually(async () => (await page.locator('#dispatch-repository option').allTextContents()).includes('app'), 'the dispatch form offers app');

    watch.expectFailure(/\/repositories: (400|409)$/);
    watch.expectFailure(/(400 \(Bad Request\)|409 \(Conflict\))/);
    await section.getByLabel('URL', { exact: true }).fill('https://github.com/acme/app.git');
    await section.getByRole('button', { name: 'Add repository' }).click();
    await section.getByRole('alert').getByText('already has a repository with this', { exact: false }).waitFor();
    await section.getByLabel('URL', { exact: true }).fill('ext::sh -c touch% /tmp/pwned');
    await section.getByRole('button', { name: 'Add repository' }).click();
    await section.getByRole('alert').getByText('url:', { exact: false }).waitFor();

    await section.getByLabel('URL', { exact: true }).fill('https://github.com/acme/scratch.git');
    await section.getByLabel('Name (optional)').fill('scratch');
    await section.getByRole('button', { name: 'Add repository' }).click();
    await section.getByText('Added scratch.').waitFor();
    await section.getByRole('button', { name: 'Remove scratch' }).click();
    await section.locator('li', { hasText: 'acme/scratch.git' }).waitFor({ state: 'detached' });
    const names = await repositoryNames();
    expect(names).to.include('app').and.not.include('scratch');
    expect(await page.locator('#dispatch-repository option').allTextContents()).to.not.include('scratch');
    expect(await page.locator('main').innerText(), 'nothing of another org').to.not.match(/secret-plans|globex/i);
  });

  it('offers a viewer the list without Add or Remove, and shows the 403 when a role is taken away while the page is open', async () => {
    await addRepository('docs', 'https://github.com/acme/docs.git');
    const { page: viewerPage } = await open(await member('viewer'));
    const listed = repositoriesOf(viewerPage);
    await listed.getByText('https://github.com/acme/docs.git').waitFor();
    expect(await listed.getByRole('button').count(), 'no Add or Remove for a viewer').to.equal(0);
    expect(await viewerPage.getByRole('heading', { name: 'Dispatch a session' }).count()).to.equal(0);

    const email = await member('member');
    const { page, watch } = await open(email);
    const remove = repositoriesOf(page).getByRole('button', { name: 'Remove docs' });
    await remove.waitFor();
    const demoted = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email, role: 'viewer' } });
    expect(demoted.status, demoted.text).to.equal(201);
    watch.expectFailure(/DELETE [^ ]+\/repositories\/[^ ]+: 403$/);
    watch.expectFailure(/403 \(Forbidden\)/);
    await remove.click();
    await repositoriesOf(page).getByRole('alert').getByText('Not removed', { exact: false }).waitFor();
    expect(await repositoryNames()).to.include('docs');
  });

  it('dispatches on a repository at a ref with an agent, sending only what was chosen, and shows a 400 with its message', async () => {
    const web = await addRepository('web', 'https://github.com/acme/web.git', { defaultBranch: 'develop' });
    const { page, watch } = await open(org.member.email);
    const sent = () => page.waitForRequest((r) => r.url().endsWith('/api/agent-dispatch') && r.method() === 'POST').then((r) => r.postDataJSON() as Record<string, unknown>);

    await page.getByLabel('Prompt', { exact: true }).fill('Write the changelog');
    const plain = sent();
    await page.getByRole('button', { name: 'Dispatch' }).click();
    expect(await plain).to.deep.equal({ projectId: org.projectId, prompt: 'Write the changelog' });
    await page.getByRole('heading', { name: /^Session / }).waitFor();
    expect(await page.getByRole('heading', { name: 'Agent and code' }).count(), 'nothing shown while nothing is reported').to.equal(0);

    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    await page.getByLabel('Prompt', { exact: true }).fill('Upgrade the ORM on the release branch');
    await page.getByLabel('Repository (optional)').selectOption({ label: 'web' });
    const ref = page.getByLabel('Branch, tag or commit (optional)');
    expect(await ref.getAttribute('placeholder'), "the repository's default branch").to.equal('develop');
    await ref.fill('-upload-pack=touch');
    watch.expectFailure(/agent-dispatch: 400$/);
    watch.expectFailure(/400 \(Bad Request\)/);
    await page.getByRole('button', { name: 'Dispatch' }).click();
    await page.getByRole('alert').getByText('ref:', { exact: false }).waitFor();

    await ref.fill('release/2.0');
    await page.getByLabel('Agent (optional)').selectOption('codex');
    const onCode = sent();
    await page.getByRole('button', { name: 'Dispatch' }).click();
    expect(await onCode).to.deep.equal({ projectId: org.projectId, prompt: 'Upgrade the ORM on the release branch', repository: web.id, ref: 'release/2.0', agent: 'codex' });
    await page.waitForURL((url) => /^\/sessions\/[^/]+$/.test(url.pathname));
    const id = new URL(page.url()).pathname.split('/').pop()!;
    const shown = await detail(id);
    expect(shown.repository).to.deep.equal({ id: web.id, url: web.url, name: 'web', defaultBranch: 'develop' });
    expect(shown.ref).to.equal('release/2.0');
    await page.locator('[data-ref]').getByText('release/2.0').waitFor();
    expect(await page.locator('dd[data-repository]').innerText()).to.equal(`web ${web.url}`);
  });

  it('shows the agent\'s work: conversation, tokens and cost, branch, commits, diffstat, tool steps and why no pull request came', async () => {
    const repository = await addRepository('checkout', 'https://github.com/acme/checkout.git');
    const dispatched = await t.call('POST', '/api/agent-dispatch', {
      token: org.apiKey, body: { projectId: org.projectId, prompt: 'Fix the flaky checkout test', repository: repository.id, ref: 'main', agent: 'claude-code' },
    });
    expect(dispatched.status, dispatched.text).to.equal(201);
    const id = dispatched.json.sessionId as string;
    const worker = await SimulatedWorker.register(t, org, 'code-box');
    await worker.move(id, 'claimed', { agent: { preset: 'claude-code' } });
    await worker.move(id, 'running', { agent: { preset: 'claude-code', agentSessionId: 'conv-7f3a' } });
    await worker.steps(id, [{ tool: 'Bash', summary: 'npm test -- checkout' }, { tool: 'Edit', summary: HOSTILE }]);
    const reported = workspaceReport(repository.id, { dirty: true });
    const commits = [...(reported.commits as object[]), { sha: 'd'.repeat(40), subject: HOSTILE }];
    await worker.move(id, 'finalizing', { usage: { inputTokens: 1200, outputTokens: 340, costUsd: 0.42 }, workspace: { ...reported, commits } });
    await worker.move(id, 'completed');
    await eventually(async () => (await detail(id)).pullRequestDelivery?.status === 'skipped', 'the owed pull request settled as skipped');

    const { page, dialogs } = await open(org.member.email);
    await page.goto(`${t.url}/sessions/${id}`);
    const code = page.locator('section.session-code');
    await code.getByRole('heading', { name: 'Agent and code' }).waitFor();
    expect(await code.locator('[data-agent]').innerText()).to.equal('claude-code');
    await code.getByText('conv-7f3a').waitFor();
    expect(await code.locator('[data-usage]').innerText()).to.equal('1,200 in · 340 out · $0.4200');
    expect(await code.locator('[data-branch]').innerText()).to.equal('troupe/checkout-fix');
    await code.getByText('aaaaaaa..ccccccc').waitFor();
    expect(await code.locator('ol.commits li').allInnerTexts()).to.deep.equal([
      'ccccccc Retry the checkout call once', 'bbbbbbb Reproduce the flaky checkout', `ddddddd ${HOSTILE}`,
    ]);
    expect(await code.locator('[data-diffstat]').innerText()).to.equal('2 files, +14 \u22123 · uncommitted changes left');
    expect(await code.locator('[data-push]').innerText()).to.equal('pushed');
    const pullRequest = await code.locator('[data-pull-request]').innerText();
    expect(pullRequest).to.contain('skipped').and.contain('acme/checkout').and.contain('the org has no GitHub connection');
    expect(await code.locator('[data-pull-request] a').count(), 'no link without a pull request').to.equal(0);

    const steps = page.locator('li[data-kind="tool"]');
    expect(await steps.count()).to.equal(2);
    await steps.first().locator('.badge').getByText('tool').waitFor();
    expect(await steps.first().innerText()).to.match(/tool Bash npm test -- checkout$/);
    // The hostile strings read as text wherever they show, and nothing of them runs.
    expect(await steps.nth(1).innerText()).to.contain(`Edit ${HOSTILE}`);
    expect(await page.locator('img[src="x"]').count()).to.equal(0);
    expect(dialogs).to.deep.equal([]);
    expect(await page.evaluate('document.querySelectorAll("[onerror]").length')).to.equal(0);
  });

  it('links a pull request only when its address is https, and shows why a push failed', async () => {
    const dispatched = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Open the pull request' } });
    const id = dispatched.json.sessionId as string;
    const { page } = await open(org.member.email);
    // The detail as a node might send it (or a tampered one would): a pull request at `url`, a push git refused.
    let url = 'https://github.com/acme/checkout/pull/12';
    await page.route(`**/api/public/sessions/${id}`, async (route) => {
      const response = await route.fetch();
      const body = await response.json() as Record<string, unknown>;
      const workspace = workspaceReport('r', { pushed: false, pushError: '! [rejected] troupe/checkout-fix (non-fast-forward)' });
      await route.fulfill({ response, json: { ...body, pullRequest: { number: 12, url }, workspace } });
    });
    await page.goto(`${t.url}/sessions/${id}`);
    const link = page.locator('[data-pull-request]').getByRole('link', { name: '#12' });
    await link.waitFor();
    expect(await link.getAttribute('href')).to.equal('https://github.com/acme/checkout/pull/12');
    expect(await link.getAttribute('rel')).to.contain('noopener');
    expect(await page.locator('[data-push]').innerText()).to.equal('not pushed: ! [rejected] troupe/checkout-fix (non-fast-forward)');

    for (const unsafe of ['javascript:alert(1)', 'http://github.com/acme/checkout/pull/12', 'data:text/html,<script>alert(1)</script>']) {
      url = unsafe;
      await page.reload();
      await page.locator('[data-pull-request]').getByText('#12').waitFor();
      expect(await page.locator('[data-pull-request] a').count(), unsafe).to.equal(0);
    }
  });
});
