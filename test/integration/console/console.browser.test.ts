// Invariant: the console is what a person watching agents and approving gates uses, so each test drives a real
// Chromium through the page as that person would, while the node is driven through its API the way workers and
// scripts drive it. Every page stays free of console errors, failed requests and requests to any other host.
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { launchBrowser, signIn, watchPage, type PageWatch } from '../../support/browser.js';
import { consoleOrg, PASSWORD, SimulatedWorker, type ConsoleOrg } from './world.js';
import { PushBridge } from './push-bridge.js';
import { CuttableProxy } from './cuttable-proxy.js';

const triage = (extra = '') => `schemaVersion: v2
name: triage
trigger: {type: manual}
nodes:
  - {id: plan, kind: approval, title: "Plan looks right?"}${extra}
edges: []
`;

describe('the console in Chromium (embedded engines)', function () {
  this.timeout(60_000);
  let t: TestNode;
  let org: ConsoleOrg;
  let browser: Browser;
  let push: PushBridge;
  const opened: { context: BrowserContext; watch: PageWatch }[] = [];

  before(async () => {
    push = await PushBridge.start();
    t = await startTestNode({ engines: 'embedded', config: { webPushSubject: 'mailto:ops@troupe.test', outboundAllow: ['127.0.0.1'] } });
    org = await consoleOrg(t);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await push?.close();
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

  /** A fresh browser profile signed in as `email`; `setup` runs on the context and its page before anything loads. */
  async function open(email: string, setup?: (context: BrowserContext, page: Page) => Promise<void>): Promise<{ page: Page; watch: PageWatch; context: BrowserContext }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const watch = watchPage(page, t.url);
    opened.push({ context, watch });
    await setup?.(context, page);
    await signIn(page, t.url, email, PASSWORD);
    return { page, watch, context };
  }

  it('signs in with email and password, signs out, and sends an ended session back to sign-in', async () => {
    const { page, context, watch } = await open(org.owner.email);
    await page.getByText(org.owner.email).waitFor();
    // The sessions page's own reads are done (the forms below the list read the project's repositories once the list
    // is drawn), so the next read after the session ends is the one the click below makes.
    await page.getByRole('heading', { name: 'Repositories' }).waitFor();
    await eventually(async () => (await page.locator('[role="status"]:has-text("Loading")').count()) === 0, 'the sessions page loaded');
    const cookie = (await context.cookies()).find((c) => c.name === 'troupe_session');
    expect(cookie).to.include({ httpOnly: true, sameSite: 'Lax' });

    // The session ends elsewhere (logout from another client): the next thing the page asks for is refused.
    const ended = await t.call('POST', '/api/auth/logout', { headers: { cookie: `troupe_session=${cookie!.value}` } });
    expect(ended.status).to.equal(200);
    watch.expectFailure(/\/api\/.*: 401$/);
    watch.expectFailure(/401 \(Unauthorized\)/);
    await page.getByRole('link', { name: 'Fleet' }).click();
    await page.getByText('Your session has ended. Sign in again to continue.').waitFor();
    // The form renders first; the address follows in the effect after that render.
    await page.waitForURL((url) => url.pathname === '/sign-in');
    expect(new URL(page.url()).searchParams.get('next')).to.equal('/fleet');

    // Signing in again returns to where the person was; signing out ends it.
    await page.getByLabel('Email').fill(org.owner.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').getByText('email or password is wrong').waitFor();
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Troupe' }).waitFor();
    const after = (await context.cookies()).find((c) => c.name === 'troupe_session');
    expect(after?.value ?? '').to.equal('');
  });

  it('shows a session dispatched after the page loaded, its moves to completed and its streamed output, without a reload', async () => {
    const { page } = await open(org.member.email);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await page.getByText('Live', { exact: true }).waitFor();
    await page.evaluate('window.loadedOnce = true');
    const worker = await SimulatedWorker.register(t, org);

    const dispatched = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Fix the flaky checkout test' } });
    expect(dispatched.status, dispatched.text).to.equal(201);
    const id = dispatched.json.sessionId as string;
    const row = page.locator(`tr[data-session="${id}"]`);
    await row.getByText('pending').waitFor();
    await row.getByText('Fix the flaky checkout test').waitFor();
    await worker.claim(id);
    await worker.move(id, 'running');
    await row.getByText('running').waitFor();

    await row.getByRole('link').click();
    await page.getByRole('heading', { name: `Session ${id}` }).waitFor();
    await page.getByText('Waiting for the agent to stream its output').waitFor();
    await eventually(async () => (await page.getByText('Live', { exact: true }).count()) === 1, 'session page live');
    await worker.stream(id, ['Reproduced ', 'the flake; ']);
    await page.locator('pre.output').getByText('Reproduced the flake;').waitFor();
    await worker.stream(id, ['the fix is ', 'a retry.']);
    await page.locator('pre.output').getByText('Reproduced the flake; the fix is a retry.').waitFor();
    await worker.move(id, 'finalizing');
    await worker.move(id, 'completed', { costUsd: 0.42 });
    await page.locator('.page-header').getByText('completed').waitFor();
    await page.getByText('$0.4200').waitFor();
    const timeline = await page.locator('ol.timeline li').evaluateAll((items) => items.map((li) => li.getAttribute('data-status')));
    expect(timeline).to.deep.equal(['pending', 'claimed', 'running', 'finalizing', 'completed']);
    expect(await page.getByRole('button', { name: 'Stop session' }).count(), 'no Stop on a finished session').to.equal(0);

    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    await page.locator(`tr[data-session="${id}"]`).getByText('completed').waitFor();
    expect(await page.evaluate('window.loadedOnce')).to.equal(true);
  });

  it('resumes the live list with Last-Event-ID after the connection drops, missing no change', async () => {
    const proxy = await CuttableProxy.start(Number(new URL(t.url).port));
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const watch = watchPage(page, proxy.url);
      opened.push({ context, watch });
      const resumedFrom: string[] = [];
      page.on('request', (request) => {
        if (!request.url().includes('/api/sessions/events')) return;
        void request.allHeaders().then((headers) => { if (headers['last-event-id'] !== undefined) resumedFrom.push(headers['last-event-id']); });
      });
      await signIn(page, proxy.url, org.owner.email, PASSWORD);
      await page.getByText('Live', { exact: true }).waitFor();
      const worker = await SimulatedWorker.register(t, org, 'resume-box');
      const first = (await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Before the drop' } })).json.sessionId as string;
      await page.locator(`tr[data-session="${first}"]`).getByText('pending').waitFor();
      await page.locator(`tr[data-session="${first}"]`).getByText('Before the drop').waitFor();

      // The drop is what the browser reports for the connections it cut (the stream, and any read in flight).
      watch.expectFailure(/: net::ERR_[A-Z_]+$/);
      watch.expectFailure(/net::ERR_[A-Z_]+ @ /);
      proxy.cutAll();
      await page.getByText('Reconnecting…').waitFor();
      // While the page is away: a new session, and the first one moves on.
      const second = (await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'During the drop' } })).json.sessionId as string;
      await worker.claim(first);
      await worker.move(first, 'running');

      await page.getByText('Live', { exact: true }).waitFor({ timeout: 15_000 });
      await page.locator(`tr[data-session="${first}"]`).getByText('running').waitFor();
      await page.locator(`tr[data-session="${second}"]`).getByText('pending').waitFor();
      await page.locator(`tr[data-session="${second}"]`).getByText('During the drop').waitFor();
      expect(resumedFrom, 'the browser resumed from the last event it saw').to.have.length.greaterThan(0);
      expect(resumedFrom[0]).to.contain(first);
    } finally {
      await proxy.close();
    }
  });

  it('lets a viewer watch a session but offers no Stop or Prompt, and the API refuses them anyway', async () => {
    const viewer = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email: `viewer-${Date.now()}@console.test`, role: 'viewer', password: PASSWORD } });
    expect(viewer.status).to.equal(201);
    const dispatched = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt: 'Watch only' } });
    const id = dispatched.json.sessionId as string;
    const { page } = await open(viewer.json.user.email);
    await page.goto(`${t.url}/sessions/${id}`);
    await page.getByRole('heading', { name: `Session ${id}` }).waitFor();
    expect(await page.getByRole('button', { name: 'Stop session' }).count()).to.equal(0);
    expect(await page.getByLabel('Send a prompt').count()).to.equal(0);
    const forced = await t.call('POST', `/api/public/sessions/${id}/stop`, { token: viewer.json.userToken });
    expect(forced.status).to.equal(403);

    const { page: memberPage } = await open(org.member.email);
    await memberPage.goto(`${t.url}/sessions/${id}`);
    await memberPage.getByRole('button', { name: 'Stop session' }).click();
    await memberPage.getByText('Stop signal sent.').waitFor();
    await memberPage.locator('.page-header').getByText('stopped').waitFor();
  });

  it('approves a gate from the inbox and shows the run moving on', async () => {
    const created = await t.call('POST', `/api/projects/${org.projectId}/workflows`, { token: org.owner.token, body: { name: 'Release', definitionYaml: triage() } });
    expect(created.status, created.text).to.equal(201);
    const published = await t.call('PATCH', `/api/workflows/${created.json.id}`, { token: org.owner.token, body: { status: 'published' } });
    expect(published.status, published.text).to.equal(200);
    const { page } = await open(org.member.email);
    await page.goto(`${t.url}/approvals`);
    await page.getByText('Nothing is waiting on you.').waitFor();

    const run = await t.call('POST', `/api/workflows/${created.json.id}/runs`, { token: org.owner.token, body: {} });
    expect(run.status, run.text).to.equal(201);
    const card = page.locator('li.gate', { hasText: 'Plan looks right?' });
    await card.waitFor();
    await card.getByText('Release', { exact: false }).waitFor();
    await card.getByText(`version ${run.json.version}`, { exact: false }).waitFor();
    await card.getByLabel('Comment (optional)').fill('Looks right to me');
    await card.getByRole('button', { name: 'Approve' }).click();
    const decided = page.locator('section', { hasText: 'Decided just now' }).locator('li.gate');
    await decided.getByText('“Looks right to me”', { exact: false }).waitFor();
    await decided.locator('[data-run-status="completed"]').waitFor();
    const after = await t.call('GET', `/api/workflow-runs/${run.json.runId}`, { token: org.owner.token });
    expect(after.json.status).to.equal('completed');
  });

  it('does not let a member approve an admin-level gate: no button, and the API refusal shown when forced', async () => {
    const gate = await t.call('POST', '/api/approval-gates', { token: org.owner.token, body: { projectId: org.projectId, title: 'Rotate production keys', requiredRole: 'admin' } });
    expect(gate.status, gate.text).to.equal(201);
    const { page, watch } = await open(org.member.email);
    await page.goto(`${t.url}/approvals`);
    await page.getByRole('heading', { name: 'Waiting on me' }).waitFor();
    await page.getByRole('button', { name: 'Show every gate of the org' }).click();
    const card = page.locator('li.gate', { hasText: 'Rotate production keys' });
    await card.getByText('Your role cannot decide this gate.').waitFor();
    expect(await card.getByRole('button', { name: 'Approve' }).count()).to.equal(0);

    // Forced: the page is told it may decide (as a stale or tampered page would be); the server still refuses.
    await page.route('**/api/approval-gates?for=me', async (route) => {
      const response = await route.fetch();
      const body = await response.json() as { gates: unknown[] };
      const all = await (await route.fetch({ url: `${t.url}/api/approval-gates` })).json() as { gates: { id: string }[] };
      body.gates = all.gates.filter((g) => g.id === gate.json.gate.id).map((g) => ({ ...g, mayDecide: true }));
      await route.fulfill({ response, json: body });
    });
    await page.reload();
    watch.expectFailure(/decide: 403$/);
    watch.expectFailure(/403 \(Forbidden\)/);
    const forced = page.locator('li.gate', { hasText: 'Rotate production keys' }).first();
    await forced.getByRole('button', { name: 'Approve' }).click();
    await forced.getByRole('alert').getByText('Not decided', { exact: false }).waitFor();
    expect(await forced.getByRole('alert').textContent()).to.match(/denied|not allowed/i);
    const still = await t.call('GET', '/api/approval-gates?status=pending', { token: org.owner.token });
    expect(still.json.gates.map((g: { id: string }) => g.id)).to.include(gate.json.gate.id);
  });

  it('diffs two workflow versions and rolls back to a new version shown at the top', async () => {
    const created = await t.call('POST', `/api/projects/${org.projectId}/workflows`, {
      token: org.owner.token, body: { name: 'Deploy', definitionYaml: triage(), nodes: [{ id: 'plan', kind: 'approval' }], edges: [] },
    });
    const id = created.json.id as string;
    const changed = await t.call('PATCH', `/api/workflows/${id}`, {
      token: org.owner.token,
      body: {
        definitionYaml: triage('\n  - {id: ship, kind: wait, seconds: 1}').replace('edges: []', 'edges:\n  - {source: plan, target: ship}'),
        nodes: [{ id: 'plan', kind: 'approval', title: 'Plan?' }, { id: 'ship', kind: 'wait' }], edges: [{ source: 'plan', target: 'ship' }],
        changeReason: 'add the ship step',
      },
    });
    expect(changed.status, changed.text).to.equal(200);
    const { page } = await open(org.member.email);
    await page.goto(`${t.url}/workflows`);
    await page.getByRole('link', { name: 'Deploy' }).click();
    await page.getByRole('heading', { name: 'Changes from v1 to v2' }).waitFor();
    const changes = page.locator('ul.changes');
    await changes.getByText('Node ship added').waitFor();
    await changes.getByText('Node plan changed: title').waitFor();
    await changes.getByText('Edge plan → ship added').waitFor();
    expect(await page.locator('.yaml-diff tr.line-added').count()).to.be.greaterThan(0);
    await page.locator('.yaml-diff tr.line-added').getByText('{id: ship, kind: wait, seconds: 1}').waitFor();
    // A member may edit (roll back) but not publish.
    expect(await page.getByRole('button', { name: 'Publish' }).count()).to.equal(0);

    await page.getByRole('button', { name: 'Roll back to version 1' }).click();
    await page.getByText("Rolled back: version 1's content is now the newest version.").waitFor();
    await page.locator('table.versions tbody tr').first().and(page.locator('[data-version="3"]')).waitFor();
    await page.getByRole('heading', { name: 'Changes from v2 to v3' }).waitFor();
    await page.locator('ul.changes').getByText('Node ship removed').waitFor();
  });

  it('offers Publish only to those allowed, and shows the server\'s refusal when the page is out of date', async () => {
    const email = `admin-${Date.now()}@console.test`;
    const admin = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email, role: 'admin', password: PASSWORD } });
    expect(admin.status, admin.text).to.equal(201);
    const created = await t.call('POST', `/api/projects/${org.projectId}/workflows`, { token: org.owner.token, body: { name: 'Nightly', definitionYaml: triage() } });
    expect(created.status, created.text).to.equal(201);
    const { page, watch } = await open(email);
    await page.goto(`${t.url}/workflows/${created.json.id}`);
    const publish = page.getByRole('button', { name: 'Publish' });
    await publish.waitFor();

    // The admin is made a member while the page still offers Publish: the server decides, and the page says so.
    const demoted = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email, role: 'member' } });
    expect(demoted.status, demoted.text).to.equal(201);
    watch.expectFailure(/PATCH [^ ]+\/api\/workflows\/[^ ]+: 403$/);
    watch.expectFailure(/403 \(Forbidden\)/);
    await publish.click();
    await page.getByRole('alert').getByText('not allowed to publish this Workflow', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Publish' }).waitFor({ state: 'detached' });
    const after = await t.call('GET', `/api/workflows/${created.json.id}`, { token: org.owner.token });
    expect(after.json.status).to.equal('draft');
  });

  it('turns on notifications and shows a pushed notification for a new gate through the service worker', async () => {
    const { page } = await open(org.owner.email, async (context, first) => {
      await context.grantPermissions(['notifications'], { origin: t.url });
      await push.attach(context, first, t.url);
    });
    await page.goto(`${t.url}/approvals`);
    await page.getByRole('button', { name: 'Turn on notifications' }).click();
    await page.getByText('This browser notifies you when a gate you may decide opens.').waitFor();

    const gate = await t.call('POST', '/api/approval-gates', { token: org.owner.token, body: { projectId: org.projectId, title: 'Approve the hotfix' } });
    expect(gate.status).to.equal(201);
    await eventually(() => push.received.some((n) => n.body === 'Approve the hotfix'), 'the node pushed to the subscription');
    await eventually(async () => {
      const shown = await page.evaluate(`navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((list) => list.map((n) => n.title + ': ' + n.body))`) as string[];
      return shown.includes('Approval needed: Approve the hotfix');
    }, 'the service worker showed the notification', 30_000);
    expect(push.errors).to.deep.equal([]);
  });
});
