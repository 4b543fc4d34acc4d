// Invariant: every page of the console loads with real data, keyboard-reachable and labelled (axe-core finds no
// serious or critical violation, in light and in dark colours), without a console error, a failed request or a request
// to any host but the node, and is screenshotted at 1280 px and 375 px, light and dark, into test/artifacts/console/
// for a person to look at.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { axeViolations, darkViolations, launchBrowser, screenshots, signIn, watchPage, type PageWatch } from '../../support/browser.js';
import { consoleOrg, PASSWORD, SimulatedWorker, workspaceReport, type ConsoleOrg } from './world.js';

const definition = (steps: string) => `schemaVersion: v2
name: release
trigger: {type: manual}
nodes:
  - {id: plan, kind: approval, title: "Plan looks right?", requiredRole: member}${steps}
edges: []
`;

/** Until no part of the page says it is still loading. */
const loaded = (page: Page) => eventually(async () => (await page.locator('[role="status"]:has-text("Loading")').count()) === 0, 'the page loaded');

describe('every console page in Chromium: accessible, clean, screenshotted (embedded engines)', function () {
  this.timeout(120_000);
  let t: TestNode;
  let org: ConsoleOrg;
  let browser: Browser;
  let page: Page;
  let watch: PageWatch;
  const ids: Record<string, string> = {};

  before(async () => {
    t = await startTestNode({ engines: 'embedded' });
    org = await consoleOrg(t);
    // A world with something on every page: a live worker, sessions in several states with output, a workflow with
    // two versions and a run waiting at a gate, a policy with two versions, an audit trail.
    const worker = await SimulatedWorker.register(t, org, 'build-box-1', 4);
    // The completed session ran an agent on a repository: its page shows the agent's work on code and its tool steps.
    const repository = await t.call('POST', `/api/projects/${org.projectId}/repositories`, { token: org.owner.token, body: { url: 'https://github.com/acme/shop.git' } });
    expect(repository.status, repository.text).to.equal(201);
    const onCode = { repository: repository.json.id, ref: 'main', agent: 'claude-code' };
    const codeReport = { agent: { preset: 'claude-code', agentSessionId: 'conv-1' }, usage: { inputTokens: 1200, outputTokens: 340, costUsd: 0.31 }, workspace: workspaceReport(repository.json.id) };
    for (const [prompt, end] of [['Fix the flaky checkout test', 'completed'], ['Upgrade the ORM', 'running'], ['Triage ENG-42', 'failed'], ['Write release notes', 'pending']] as const) {
      const r = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt, ...(end === 'completed' ? onCode : {}) } });
      ids[prompt] = r.json.sessionId;
      if (end === 'pending') continue;
      await worker.claim(r.json.sessionId);
      await worker.move(r.json.sessionId, 'running');
      if (end === 'running') continue;
      if (end === 'completed') await worker.steps(r.json.sessionId, [{ tool: 'Bash', summary: 'npm test' }, { tool: 'Edit', summary: 'src/checkout.ts' }]);
      await worker.move(r.json.sessionId, 'finalizing');
      await worker.move(r.json.sessionId, end, end === 'failed' ? { error: 'tests did not pass', costUsd: 0.08 } : codeReport);
    }
    await worker.heartbeat();
    const w = await t.call('POST', `/api/projects/${org.projectId}/workflows`, { token: org.owner.token, body: { name: 'Release train', definitionYaml: definition('') } });
    ids.workflow = w.json.id;
    await t.call('PATCH', `/api/workflows/${w.json.id}`, { token: org.owner.token, body: { definitionYaml: definition('\n  - {id: ship, kind: wait, seconds: 1}'), changeReason: 'add ship' } });
    await t.call('PATCH', `/api/workflows/${w.json.id}`, { token: org.owner.token, body: { status: 'published' } });
    await t.call('POST', `/api/workflows/${w.json.id}/runs`, { token: org.owner.token, body: {} });
    await t.call('POST', '/api/approval-gates', { token: org.owner.token, body: { projectId: org.projectId, title: 'Rotate production keys', requiredRole: 'admin' } });
    const policy = await t.call('POST', '/api/policies', {
      token: org.owner.token,
      body: { name: 'Members run agents', cedarPolicy: 'permit (principal, action == Troupe::Action::"dispatch", resource);', status: 'active', description: 'Lets members dispatch' },
    });
    expect(policy.status, policy.text).to.equal(201);
    ids.policy = policy.json.policy.id;
    await t.call('PATCH', `/api/policies/${ids.policy}`, { token: org.owner.token, body: { description: 'Lets members dispatch sessions', changeReason: 'wording' } });

    browser = await launchBrowser();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    watch = watchPage(page, t.url);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const pages: [string, () => string, string][] = [
    ['sessions', () => '/sessions', 'Sessions'],
    ['session', () => `/sessions/${ids['Fix the flaky checkout test']}`, `Session ${''}`],
    ['fleet', () => '/fleet', 'Fleet'],
    ['approvals', () => '/approvals', 'Approvals'],
    ['workflows', () => '/workflows', 'Workflows'],
    ['workflow', () => `/workflows/${ids.workflow}`, 'Release train'],
    ['policies', () => '/policies', 'Policies'],
    ['policy', () => `/policies/${ids.policy}`, 'Members run agents'],
    ['incidents', () => '/incidents', 'Incidents'],
    ['audit', () => '/audit', 'Audit'],
  ];

  it('the sign-in page', async () => {
    await page.goto(`${t.url}/`);
    await page.getByRole('heading', { name: 'Sign in to Troupe' }).waitFor();
    expect(await axeViolations(page)).to.deep.equal([]);
    await screenshots(page, 'sign-in');
    expect(await darkViolations(page, 'sign-in'), 'axe on sign-in in dark').to.deep.equal([]);
    await signIn(page, t.url, org.owner.email, PASSWORD);
  });

  for (const [name, path, heading] of pages) {
    it(`the ${name} page`, async () => {
      await page.goto(`${t.url}${path()}`);
      await page.getByRole('heading', { level: 1, name: heading }).first().waitFor();
      await page.waitForLoadState('networkidle').catch(() => undefined);
      await loaded(page);
      expect(await page.locator('.note-error').count(), `no error shown on ${name}`).to.equal(0);
      expect(await axeViolations(page), `axe on ${name}`).to.deep.equal([]);
      await screenshots(page, name);
      expect(await darkViolations(page, name), `axe on ${name} in dark`).to.deep.equal([]);
      // Keyboard: the first Tab lands on the skip link, which leads to the content.
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement?.textContent')).to.equal('Skip to content');
      expect(await page.evaluate('document.documentElement.scrollWidth <= 375 + 1 || innerWidth > 375')).to.equal(true);
      expect(watch.consoleErrors, 'console errors').to.deep.equal([]);
      expect(watch.failedRequests, 'failed requests').to.deep.equal([]);
      expect(watch.foreignRequests, 'requests to other hosts').to.deep.equal([]);
    });
  }

  it("reads the sessions page's first screen once, from the fetches its page named, without asking whether it is signed in", async () => {
    await page.goto(`${t.url}/sessions`);
    await page.locator('tbody tr').first().waitFor();
    const reads = await page.evaluate(`performance.getEntriesByType('resource')
      .filter((e) => /\\/api\\/(auth\\/session|cli\\/whoami|org\\/list|sessions\\?)/.test(e.name)).map((e) => e.name.replace(location.origin, '') + ' ' + e.initiatorType)`);
    expect(reads).to.deep.equal(['/api/cli/whoami link', '/api/org/list link', '/api/sessions?limit=50 link']);
  });

  it('is readable at 375 px: no page scrolls sideways as a whole', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const [name, path] of pages) {
      await page.goto(`${t.url}${path()}`);
      await loaded(page);
      const overflow = await page.evaluate('document.documentElement.scrollWidth') as number;
      expect(overflow, `${name} is ${overflow} px wide at 375`).to.be.at.most(376);
    }
  });
});
