// Invariant (issue 36): the queue controls work from the console, each through the existing API and each driven here
// in Chromium: a project's queue paused and resumed, its weight and its concurrency (limit, strategy) set; a worker
// paused, resumed and drained; a workflow's schedule paused and resumed; a session dispatched at a chosen priority. The
// paused state shows. A role without the right sees no control for it (and the API refuses it), and the pages are free
// of serious axe-core violations, console errors and failed requests.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { axeViolations, darkViolations, launchBrowser, screenshots, signIn, watchPage, type PageWatch } from '../../support/browser.js';
import { consoleOrg, PASSWORD, SimulatedWorker, type ConsoleOrg } from './world.js';

/** Until no part of the page says it is still loading. */
const loaded = (page: Page) => eventually(async () => (await page.locator('[role="status"]:has-text("Loading")').count()) === 0, 'the page loaded');

const scheduled = `schemaVersion: v2
name: nightly
trigger: {type: schedule, cron: "0 3 * * *"}
nodes:
  - {id: done, kind: wait, seconds: 0}
edges: []
`;

describe('queue controls in the console, in Chromium (embedded engines)', function () {
  this.timeout(120_000);
  let t: TestNode;
  let org: ConsoleOrg;
  let browser: Browser;
  let viewer: { email: string; token: string };
  let worker: SimulatedWorker;
  let workflowId: string;
  const opened: { context: BrowserContext; watch: PageWatch }[] = [];

  before(async () => {
    t = await startTestNode({ engines: 'embedded' });
    org = await consoleOrg(t);
    const email = `viewer-${randomUUID().slice(0, 8)}@console.test`;
    const r = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email, role: 'viewer', password: PASSWORD } });
    expect(r.status, r.text).to.equal(201);
    viewer = { email, token: r.json.userToken };
    worker = await SimulatedWorker.register(t, org, 'build-box-1');
    await worker.heartbeat();
    const created = await t.call('POST', `/api/projects/${org.projectId}/workflows`, { token: org.owner.token, body: { name: 'nightly', definitionYaml: scheduled } });
    expect(created.status, created.text).to.equal(201);
    workflowId = created.json.id;
    expect((await t.call('PATCH', `/api/workflows/${workflowId}`, { token: org.owner.token, body: { status: 'published' } })).status).to.equal(200);
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

  async function open(email: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const watch = watchPage(page, t.url);
    opened.push({ context, watch });
    await signIn(page, t.url, email, PASSWORD);
    return page;
  }

  async function check(page: Page, name: string): Promise<void> {
    await loaded(page);
    expect(await axeViolations(page), `axe on ${name}`).to.deep.equal([]);
    await screenshots(page, name);
    expect(await darkViolations(page, name), `axe on ${name} in dark`).to.deep.equal([]);
  }

  const queue = async () => (await t.call('GET', `/api/projects/${org.projectId}/queue`, { token: org.owner.token })).json;
  const workerRow = async () => ((await t.call('GET', '/api/fleet/workers', { token: org.owner.token })).json.workers as Array<{ id: string; paused: boolean }>)
    .find((w) => w.id === worker.workerId)!;

  it("pauses and resumes the project's queue and sets its weight and concurrency from the fleet page", async () => {
    const page = await open(org.owner.email);
    await page.goto(`${t.url}/fleet`);
    const section = page.locator('section[data-project-queue]');
    await section.locator('[data-queue-state="running"]').waitFor();
    await section.getByRole('button', { name: 'Pause queue' }).click();
    await section.getByText('Queue paused.').waitFor();
    await section.locator('[data-queue-state="paused"]').waitFor();
    expect((await queue()).paused).to.equal(true);
    await check(page, 'fleet-queue-paused');
    await section.getByRole('button', { name: 'Resume queue' }).click();
    await section.locator('[data-queue-state="running"]').waitFor();
    expect((await queue()).paused).to.equal(false);

    await section.getByLabel('Weight (offers per round, 1–100)').fill('4');
    await section.getByRole('button', { name: 'Save weight' }).click();
    await section.getByText('Weight saved.').waitFor();
    await eventually(async () => (await section.locator('[data-queue-weight]').textContent()) === '4', 'the weight shown');
    expect((await queue()).weight).to.equal(4);

    await section.getByLabel('Sessions per concurrency key').fill('2');
    await section.getByLabel('Past the limit').selectOption('cancel-newest');
    await section.getByRole('button', { name: 'Save concurrency' }).click();
    await section.getByText('Concurrency saved.').waitFor();
    await section.locator('[data-concurrency]').getByText('At most 2 session(s) per concurrency key').waitFor();
    const concurrency = (await t.call('GET', `/api/projects/${org.projectId}/concurrency`, { token: org.owner.token })).json;
    expect([concurrency.defaultLimit, concurrency.strategy]).to.deep.equal([2, 'cancel-newest']);
  });

  it('pauses, resumes and drains a worker from the fleet page, and shows it paused', async () => {
    const page = await open(org.owner.email);
    await page.goto(`${t.url}/fleet`);
    const row = page.locator(`tr[data-worker="${worker.workerId}"]`);
    await row.getByRole('button', { name: 'Pause build-box-1' }).click();
    await row.locator('[data-worker-paused]').waitFor();
    expect((await workerRow()).paused).to.equal(true);
    await row.getByRole('button', { name: 'Resume build-box-1' }).click();
    await eventually(async () => (await row.locator('[data-worker-paused]').count()) === 0, 'the pause gone');
    expect((await workerRow()).paused).to.equal(false);
    await row.getByRole('button', { name: 'Drain build-box-1' }).click();
    await row.getByText('Drain requested').waitFor();
    const drains = await t.node.deps.db('daemon_mutations').where({ org_id: org.orgId, worker_host_id: worker.workerId, op: 'worker.drain' }).count({ n: '*' });
    expect(Number(drains[0]!.n)).to.equal(1);
  });

  it("pauses and resumes a workflow's schedule from its page", async () => {
    const page = await open(org.owner.email);
    await page.goto(`${t.url}/workflows/${workflowId}`);
    const section = page.locator('section[data-schedule-state]');
    await page.locator('section[data-schedule-state="active"]').waitFor();
    await section.getByRole('button', { name: 'Pause schedule' }).click();
    await page.locator('section[data-schedule-state="paused"]').waitFor();
    const schedule = async () => (await t.call('GET', `/api/workflows/${workflowId}/schedule`, { token: org.owner.token })).json;
    expect((await schedule()).paused).to.equal(true);
    await check(page, 'workflow-schedule-paused');
    await page.getByRole('button', { name: 'Resume schedule' }).click();
    await page.locator('section[data-schedule-state="active"]').waitFor();
    expect((await schedule()).paused).to.equal(false);
  });

  it('dispatches at the priority chosen in the dispatch form', async () => {
    const page = await open(org.member.email);
    await page.goto(`${t.url}/sessions`);
    await page.getByLabel('Prompt').fill('Fix the checkout, urgently');
    await page.getByLabel('Priority (within the project, higher first)').selectOption('8');
    await page.getByRole('button', { name: 'Dispatch' }).click();
    await page.waitForURL(/\/sessions\/[0-9a-f]{16}$/);
    const id = page.url().split('/').pop()!;
    expect((await t.call('GET', `/api/public/sessions/${id}`, { token: org.apiKey })).json.priority).to.equal(8);
  });

  it('shows no control to a role without the right, and the API refuses it; a project admin gets the pause only', async () => {
    for (const person of [viewer, org.member]) {
      const page = await open(person.email);
      await page.goto(`${t.url}/fleet`);
      await page.locator('section[data-project-queue] [data-queue-state]').waitFor();
      await page.locator(`tr[data-worker="${worker.workerId}"]`).waitFor();
      await loaded(page);
      for (const name of ['Pause queue', 'Resume queue', 'Save weight', 'Save concurrency', 'Pause build-box-1', 'Drain build-box-1']) {
        expect(await page.getByRole('button', { name }).count(), `${person.email}: ${name}`).to.equal(0);
      }
      await page.goto(`${t.url}/workflows/${workflowId}`);
      await page.locator('section[data-schedule-state]').waitFor();
      expect(await page.getByRole('button', { name: 'Pause schedule' }).count()).to.equal(0);
      for (const [method, path, body] of [
        ['POST', `/api/projects/${org.projectId}/queue/pause`, undefined],
        ['PUT', `/api/projects/${org.projectId}/queue`, { weight: 2 }],
        ['PUT', `/api/projects/${org.projectId}/concurrency`, { defaultLimit: 1, strategy: 'queue' }],
        ['POST', `/api/workers/${worker.workerId}/pause`, undefined],
        ['POST', `/api/workers/${worker.workerId}/drain`, undefined],
        ['POST', `/api/workflows/${workflowId}/schedule/pause`, undefined],
      ] as const) {
        const r = await t.call(method, path, { token: person.token, ...(body ? { body } : {}) });
        expect(r.status, `${person.email} ${method} ${path}`).to.equal(403);
      }
    }
    // A project admin may pause the project's queue (Cedar `publish` on it), but not set its weight or concurrency.
    const email = `project-admin-${randomUUID().slice(0, 8)}@console.test`;
    const made = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, {
      token: t.adminToken, body: { email, role: 'viewer', password: PASSWORD, projects: [{ id: org.projectId, role: 'admin' }] },
    });
    expect(made.status, made.text).to.equal(201);
    const projectAdmin = await open(email);
    await projectAdmin.goto(`${t.url}/fleet`);
    const section = projectAdmin.locator('section[data-project-queue]');
    await section.getByRole('button', { name: 'Pause queue' }).click();
    await section.locator('[data-queue-state="paused"]').waitFor();
    await section.getByRole('button', { name: 'Resume queue' }).click();
    await section.locator('[data-queue-state="running"]').waitFor();
    expect(await section.getByRole('button', { name: 'Save weight' }).count()).to.equal(0);
    expect(await projectAdmin.getByRole('button', { name: 'Pause build-box-1' }).count()).to.equal(0);

    const viewerPage = await open(viewer.email);
    await viewerPage.goto(`${t.url}/fleet`);
    await check(viewerPage, 'fleet-queue-viewer');
  });
});
