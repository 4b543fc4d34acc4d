// Invariant (issue 35 §1): a session's page shows its whole transcript: the newest page at once, earlier pages on
// request, a search over all of it, and new entries live as the worker relays them, each once and in seq order; every
// text shown as text (no markup runs), and nothing of another org's. Chromium drives the page; the node is driven
// over HTTP as a worker drives it.
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { axeViolations, darkViolations, launchBrowser, screenshots, signIn, watchPage, type PageWatch } from '../../support/browser.js';
import { consoleOrg, PASSWORD, SimulatedWorker, type ConsoleOrg } from '../console/world.js';

const HOSTILE = '<img src=x onerror=alert(1)>';

describe('the console: a session\'s transcript, paged, searched and followed live (embedded engines)', function () {
  this.timeout(90_000);
  let t: TestNode;
  let org: ConsoleOrg;
  let worker: SimulatedWorker;
  let browser: Browser;
  const opened: { context: BrowserContext; watch: PageWatch }[] = [];

  before(async () => {
    t = await startTestNode({ engines: 'embedded' });
    org = await consoleOrg(t);
    worker = await SimulatedWorker.register(t, org);
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

  /** Agent output as a worker relays it (the simulated worker of console tests streams deltas only; its token is its own). */
  const output = async (id: string, chunks: string[]) => {
    const jwt = (worker as unknown as { jwt: string }).jwt;
    const r = await t.call('POST', `/api/sessions/${id}/output`, { token: jwt, body: { workerId: worker.workerId, chunks } });
    expect(r.status, r.text).to.equal(202);
  };

  async function runningSession(prompt: string): Promise<string> {
    const d = await t.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt } });
    expect(d.status, d.text).to.equal(201);
    const id = d.json.sessionId as string;
    await worker.claim(id);
    await worker.move(id, 'running');
    return id;
  }

  const seqsShown = async (page: Page) => (await page.getByRole('list', { name: 'Transcript entries' }).locator('li').evaluateAll(
    (items) => items.map((li) => Number(li.getAttribute('data-seq'))),
  ));

  it('shows the newest page, pages back, and follows new entries live, each once and in order', async () => {
    const id = await runningSession('Tidy the logs');
    // 450 lines: more than the first page (200) shows.
    for (let b = 0; b < 3; b++) await output(id, Array.from({ length: 150 }, (_, i) => `early line ${b * 150 + i}\n`));
    const { page, dialogs } = await open(org.member.email);
    await page.goto(`${t.url}/sessions/${id}`);
    const list = page.getByRole('list', { name: 'Transcript entries' });
    await list.getByText('early line 449', { exact: true }).waitFor();
    const first = await seqsShown(page);
    expect(first).to.have.length(200);
    expect(first.at(-1)).to.equal(first[0]! + 199);
    // Following: the transcript's stream is open.
    await page.locator('section.transcript .live-on').waitFor();

    // Live: lines the worker relays now appear at the end, once each, the hostile one as text.
    await output(id, ['live one\n', `${HOSTILE}\n`, 'live three\n']);
    await list.getByText('live three', { exact: true }).waitFor();
    await list.getByText(HOSTILE, { exact: true }).waitFor();
    await worker.steps(id, [{ tool: 'Bash', summary: 'npm test' }]);
    await list.getByText('Bash: npm test', { exact: true }).waitFor();
    await worker.move(id, 'finalizing');
    await worker.move(id, 'completed');
    await list.locator('li[data-entry-kind="status"]', { hasText: 'finalizing → completed' }).waitFor();
    let shown = await seqsShown(page);
    expect(shown, 'contiguous, no repeats').to.deep.equal(Array.from({ length: shown.length }, (_, i) => shown[0]! + i));

    // Earlier pages until the first entry.
    while (await page.getByRole('button', { name: 'Earlier entries' }).isVisible()) await page.getByRole('button', { name: 'Earlier entries' }).click().then(() => page.waitForTimeout(100));
    await eventually(async () => (await seqsShown(page))[0] === 1, 'the transcript from #1');
    shown = await seqsShown(page);
    const stored = (await t.call('GET', `/api/public/sessions/${id}/transcript?limit=1000`, { token: org.apiKey })).json;
    expect(shown).to.deep.equal(stored.entries.map((e: { seq: number }) => e.seq));
    await list.locator('li[data-entry-kind="prompt"]', { hasText: 'Tidy the logs' }).waitFor();
    expect(dialogs, 'no markup ran').to.deep.equal([]);
    expect(await axeViolations(page)).to.deep.equal([]);
    await screenshots(page, 'session-transcript');
    expect(await darkViolations(page, 'session-transcript'), 'axe in dark').to.deep.equal([]);
  });

  it('searches the whole transcript, with more matches on request, and clears back to the live view', async () => {
    const id = await runningSession('Find the needle');
    await output(id, Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? `needle ${i}\n` : `hay ${i}\n`)));
    const { page } = await open(org.member.email);
    await page.goto(`${t.url}/sessions/${id}`);
    await page.getByRole('list', { name: 'Transcript entries' }).getByText('hay 299', { exact: true }).waitFor();
    await page.getByLabel('Search the transcript').fill('NEEDLE');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const matches = page.getByRole('list', { name: 'Matching entries' });
    await matches.getByText('needle 0', { exact: true }).waitFor();
    // 150 lines match plus the prompt ("Find the needle"): the first page has 151 of them, none of the hay.
    expect(await matches.locator('li').count()).to.equal(151);
    expect(await matches.getByText('hay', { exact: false }).count()).to.equal(0);
    await page.getByLabel('Search the transcript').fill('nothing like this');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('No entry contains “nothing like this”.').waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByRole('list', { name: 'Matching entries' }).waitFor({ state: 'detached' });
  });

  it("another org's person reaches neither the session nor its transcript", async () => {
    const id = await runningSession('Secret work');
    await output(id, ['secret line\n']);
    const globex = await consoleOrg(t, 'Globex');
    const r = await t.call('GET', `/api/public/sessions/${id}/transcript`, { token: globex.owner.token });
    expect(r.status).to.equal(404);
    const { page, watch } = await open(globex.owner.email);
    watch.expectFailure(/404/);
    await page.goto(`${t.url}/sessions/${id}`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByText('secret line').count()).to.equal(0);
  });
});
