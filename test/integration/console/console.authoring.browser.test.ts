// Invariant (issue 37 §3): workflows are authored in the console, each step driven here in Chromium against a real
// node. The Workflows page creates one; the editor holds the definition YAML in CodeMirror 6, marks where the text is
// not YAML as it is typed and the server's refusal on the line its field path names, draws the canvas from
// nodes/edges and redraws it as the YAML changes; save makes a version (Ctrl+S too), publish, compare and rollback
// work from it; the builder conversation (goal, three rounds, a draft shown as a graph and YAML) stores a proposal
// that opens in the editor and becomes a workflow whose definition is the server's own reading of the plan. Every
// action is reachable by keyboard, the pages have no serious or critical axe-core violation, no console error (a CSP
// refusal of CodeMirror's styles would be one), no failed request and no request to another host, and a viewer gets
// no authoring control (the API refuses it too).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { parse } from 'yaml';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestNode, type TestNode } from '../../support/node.js';
import { eventually } from '../../support/transport.js';
import { axeViolations, launchBrowser, screenshots, signIn, watchPage, type PageWatch } from '../../support/browser.js';
import { definitionOf, type CandidatePlan } from '../../../actors/kinds/authoring/plan.js';
import { consoleOrg, PASSWORD, type ConsoleOrg } from './world.js';

/** Until no part of the page says it is still loading. */
const loaded = (page: Page) => eventually(async () => (await page.locator('[role="status"]:has-text("Loading")').count()) === 0, 'the page loaded');

const twoSteps = `schemaVersion: v2
name: release
trigger: {type: manual}
nodes:
  - id: plan
    kind: agent
    prompt: Plan the release
  - id: ship
    kind: agent
    prompt: Ship it
edges:
  - {source: plan, target: ship}
`;

describe('workflow authoring in the console, in Chromium (embedded engines)', function () {
  this.timeout(180_000);
  let t: TestNode;
  let org: ConsoleOrg;
  let other: ConsoleOrg;
  let browser: Browser;
  let viewer: { email: string; token: string };
  let workflowId: string;
  const opened: { context: BrowserContext; watch: PageWatch }[] = [];

  before(async () => {
    t = await startTestNode({ engines: 'embedded' });
    org = await consoleOrg(t);
    other = await consoleOrg(t, 'Other org');
    const email = `viewer-${randomUUID().slice(0, 8)}@console.test`;
    const r = await t.call('POST', `/api/admin/orgs/${org.orgId}/users`, { token: t.adminToken, body: { email, role: 'viewer', password: PASSWORD } });
    expect(r.status, r.text).to.equal(201);
    viewer = { email, token: r.json.userToken };
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

  async function open(email: string): Promise<{ page: Page; watch: PageWatch }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const watch = watchPage(page, t.url);
    opened.push({ context, watch });
    await signIn(page, t.url, email, PASSWORD);
    return { page, watch };
  }

  /** axe and screenshots in the light scheme, then in the dark one (the editor and canvas take the console's colours). */
  async function check(page: Page, name: string): Promise<void> {
    await loaded(page);
    expect(await axeViolations(page), `axe on ${name}`).to.deep.equal([]);
    await screenshots(page, name);
    // Readable at 375 px: the page as a whole never scrolls sideways (the editor and canvas scroll inside their boxes).
    const original = page.viewportSize()!;
    await page.setViewportSize({ width: 375, height: 800 });
    const wide = await page.evaluate('document.documentElement.scrollWidth') as number;
    await page.setViewportSize(original);
    expect(wide, `${name} is ${wide} px wide at 375`).to.be.at.most(376);
    await page.emulateMedia({ colorScheme: 'dark' });
    try {
      expect(await axeViolations(page), `axe on ${name} (dark)`).to.deep.equal([]);
      await screenshots(page, `${name}-dark`);
    } finally {
      await page.emulateMedia({ colorScheme: 'light' });
    }
  }

  const editor = (page: Page) => page.locator('[data-yaml-editor] .cm-content').first();
  const editorText = async (page: Page) => (await editor(page).innerText()).replace(/\n+$/, '');
  /**
   * Replaces the whole text the way a person would: select all, paste. (Playwright's insertText of several lines goes
   * through the browser's own contenteditable editing, which writes style attributes the CSP rightly refuses; a paste
   * is handled by CodeMirror itself, as a person's paste is.)
   */
  async function pasteYaml(page: Page, text: string): Promise<void> {
    await page.keyboard.press('Control+A');
    // Evaluated as page text (this file is typed for Node): a paste event on the editor, which has the focus.
    await page.evaluate(`(() => {
      const target = document.querySelector('[data-yaml-editor]')?.shadowRoot?.activeElement;
      if (!target) throw new Error('the editor does not have the focus');
      const data = new DataTransfer();
      data.setData('text/plain', ${JSON.stringify(text)});
      target.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    })()`);
    await eventually(async () => (await editorText(page)) === text.replace(/\n+$/, ''), 'the editor holds the new text');
  }
  async function setYaml(page: Page, text: string): Promise<void> {
    await editor(page).click();
    await pasteYaml(page, text);
  }
  const canvas = (page: Page, nodes: number, edges: number) => page.locator(`figure.workflow-canvas[data-canvas-nodes="${nodes}"][data-canvas-edges="${edges}"]`).first().waitFor();
  const workflowsOf = async (projectId: string) => ((await t.call('GET', `/api/workflows?projectId=${projectId}`, { token: org.owner.token })).json.workflows as { id: string }[]).length;

  it('creates a workflow from the Workflows page: canvas follows the YAML, syntax and server errors on their lines', async () => {
    const { page, watch } = await open(org.owner.email);
    await page.goto(`${t.url}/workflows`);
    await page.getByRole('link', { name: 'New workflow' }).click();
    await page.waitForURL(/\/workflows\/new$/);
    await page.getByRole('heading', { level: 1, name: 'New workflow' }).waitFor();
    // The starter definition is drawn: three nodes, two edges, one box per node.
    await canvas(page, 3, 2);
    expect(await page.locator('g.canvas-node').count()).to.equal(3);
    await check(page, 'workflow-new');

    await page.getByLabel('Name').fill('Release train');
    await setYaml(page, twoSteps);
    await canvas(page, 2, 1);
    expect(await page.locator('g.canvas-node[data-node="ship"]').count()).to.equal(1);
    expect(await page.locator('g.canvas-edge[data-edge="plan->ship"]').count()).to.equal(1);

    // Not YAML: marked where it breaks as it is typed, and the canvas keeps the last graph that parsed.
    await setYaml(page, twoSteps.replace('prompt: Ship it', 'prompt: [Ship it'));
    await page.locator('.cm-lint-marker-error').first().waitFor();
    await page.getByText('The YAML does not parse').waitFor();
    await canvas(page, 2, 1);

    // YAML, but not a definition the server takes: the refusal is shown and marked on the line its path names.
    const robot = twoSteps.replace('    kind: agent\n    prompt: Ship it', '    kind: robot\n    prompt: Ship it');
    await setYaml(page, robot);
    await page.locator('g.canvas-node.canvas-kind-other[data-node="ship"]').waitFor();
    watch.expectFailure(/status of 400 .* @ \S+\/api\/projects\/[^/ ]+\/workflows$|\/api\/projects\/[^/ ]+\/workflows: 400$/);
    const before = await workflowsOf(org.projectId);
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.getByRole('alert').filter({ hasText: 'definitionYaml.nodes.1.kind' }).waitFor();
    await eventually(async () => (await page.locator('.cm-line:has(.cm-lintRange-error)').count()) === 1, 'the server error marked');
    expect((await page.locator('.cm-line:has(.cm-lintRange-error)').innerText()).trim()).to.equal('kind: robot');
    expect(await workflowsOf(org.projectId), 'nothing created').to.equal(before);
    await screenshots(page, 'workflow-new-refused');

    // Fixed by keyboard: Tab from the name reaches the editor, the fix is typed, Ctrl+S creates (the editor's save key).
    await page.getByLabel('Name').focus();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.shadowRoot?.activeElement?.classList.contains("cm-content") ?? false'), 'focus in the editor').to.equal(true);
    await pasteYaml(page, twoSteps);
    await page.keyboard.press('Control+s');
    await page.waitForURL(/\/workflows\/[0-9a-f-]{36}\/edit$/);
    workflowId = page.url().split('/').slice(-2)[0]!;
    const created = (await t.call('GET', `/api/workflows/${workflowId}`, { token: org.owner.token })).json;
    expect([created.name, created.version, created.status, created.definitionYaml]).to.deep.equal(['Release train', 1, 'draft', twoSteps]);
    // The canvas stored with the version is the definition's own graph.
    expect(created.nodes.map((n: { id: string }) => n.id)).to.deep.equal(['plan', 'ship']);
    expect(created.edges).to.deep.equal([{ source: 'plan', target: 'ship' }]);
  });

  it('saves versions, publishes, compares and rolls back from the editor', async () => {
    const { page } = await open(org.owner.email);
    await page.goto(`${t.url}/workflows/${workflowId}`);
    await page.getByRole('link', { name: 'Edit definition' }).click();
    await page.waitForURL(/\/edit$/);
    await canvas(page, 2, 1);
    await check(page, 'workflow-editor');

    // A third step, saved with a reason: version 2, and the canvas drawn with it.
    const three = twoSteps.replace('edges:\n  - {source: plan, target: ship}', `  - id: announce\n    kind: wait\n    seconds: 5\nedges:\n  - {source: plan, target: ship}\n  - {source: ship, target: announce}`);
    await setYaml(page, three);
    await canvas(page, 3, 2);
    await page.getByText('unsaved changes').waitFor();
    await page.getByLabel('Why (saved with the version)').fill('announce after shipping');
    await page.getByRole('button', { name: 'Save version' }).click();
    await page.getByText('Saved as version 2.').waitFor();
    let w = (await t.call('GET', `/api/workflows/${workflowId}`, { token: org.owner.token })).json;
    expect([w.version, w.definitionYaml, w.nodes.length]).to.deep.equal([2, three, 3]);
    const versions = (await t.call('GET', `/api/workflows/${workflowId}/versions`, { token: org.owner.token })).json as { version: number; changeReason: string | null }[];
    expect(versions[0]).to.include({ version: 2, changeReason: 'announce after shipping' });

    // Ctrl+S in the editor saves too.
    await setYaml(page, three.replace('Ship it', 'Ship it to production'));
    await page.keyboard.press('Control+s');
    await page.getByText('Saved as version 3.').waitFor();

    await page.getByRole('button', { name: 'Publish v3' }).click();
    await page.getByText('Published: version 4 is live.').waitFor();
    w = (await t.call('GET', `/api/workflows/${workflowId}`, { token: org.owner.token })).json;
    expect([w.status, w.publishedVersion]).to.deep.equal(['published', 4]);

    // Compare v2 with v3: the prompt change is named on the canvas and shown in the YAML.
    await page.getByLabel('Compare from v2').check();
    await page.getByLabel('Compare to v3').check();
    await page.getByRole('heading', { name: 'Changes from v2 to v3' }).waitFor();
    await page.locator('.changes li', { hasText: 'Node ship changed: prompt' }).waitFor();

    // Roll back to version 1: a new version with v1's content, and the editor shows it.
    await page.getByRole('button', { name: 'Roll back to version 1' }).click();
    await page.getByText("Rolled back: version 1's content is now the newest version.").waitFor();
    await eventually(async () => (await editorText(page)) === twoSteps.trimEnd(), 'the editor shows the rolled-back text');
    await canvas(page, 2, 1);
    w = (await t.call('GET', `/api/workflows/${workflowId}`, { token: org.owner.token })).json;
    expect([w.version, w.definitionYaml, w.status]).to.deep.equal([5, twoSteps, 'published']);
    await screenshots(page, 'workflow-editor-rolled-back');
  });

  it('drafts with the builder by keyboard: goal, three rounds, draft as graph and YAML, proposal opened in the editor', async () => {
    const { page } = await open(org.member.email);
    await page.goto(`${t.url}/workflows`);
    await page.getByRole('link', { name: 'Draft with the builder' }).click();
    await page.waitForURL(/\/workflows\/builder$/);
    await check(page, 'workflow-builder');
    const before = await workflowsOf(org.projectId);

    await page.getByLabel('Goal: what should this workflow do?').focus();
    await page.keyboard.type('Fix flaky tests');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    // Each round takes the focus, so the answer is typed where the person is.
    await page.locator('form[data-round="outcome"]').waitFor();
    // The round takes the focus once drawn (an effect after the render): waited for, as for the rounds below.
    await eventually(async () => (await page.evaluate('document.activeElement?.closest("form")?.dataset.round')) === 'outcome', 'focus on the outcome');
    await page.keyboard.type('The test suite passes three times in a row');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.locator('form[data-round="steps"]').waitFor();
    await eventually(async () => (await page.evaluate('document.activeElement?.closest("form")?.dataset.round')) === 'steps', 'focus on the steps');
    await page.keyboard.type('Find the flaky tests\nFix them and open a pull request');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.locator('form[data-round="guardrails"]').waitFor();
    await eventually(async () => (await page.evaluate('document.activeElement?.closest("form")?.dataset.round')) === 'guardrails', 'focus on the guardrails');
    await check(page, 'workflow-builder-round-3');
    await page.keyboard.press('Tab');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');

    // The draft: an approval before the last step, drawn and written out.
    const draft = page.locator('[data-draft]');
    await draft.waitFor();
    await canvas(page, 3, 2);
    for (const id of ['step-1', 'approve', 'step-2']) expect(await draft.locator(`g.canvas-node[data-node="${id}"]`).count(), id).to.equal(1);
    const draftYaml = await editorText(page);
    expect(parse(draftYaml).nodes.map((n: { kind: string }) => n.kind)).to.deep.equal(['agent', 'approval', 'agent']);
    expect(parse(draftYaml).nodes[1].requiredRole).to.equal('member');
    expect(await workflowsOf(org.projectId), 'a draft changes no workflow').to.equal(before);
    await check(page, 'workflow-builder-draft');

    // Store as proposal, by keyboard from the draft's heading (which took the focus).
    for (let i = 0; i < 12 && (await page.evaluate('document.activeElement?.textContent')) !== 'Store as proposal'; i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    const stored = page.locator('[data-proposal]');
    await stored.waitFor();
    const proposalId = (await stored.getAttribute('data-proposal'))!;
    const proposal = (await t.call('GET', `/api/projects/${org.projectId}/authoring/proposals/${proposalId}`, { token: org.member.token })).json;
    const plan = proposal.versions[0].plan as CandidatePlan;
    // The page's YAML reads as exactly the definition the server checks the plan as.
    expect(parse(draftYaml)).to.deep.equal(definitionOf(plan));
    expect(await workflowsOf(org.projectId), 'a proposal changes no workflow').to.equal(before);

    // The link to the editor has the focus; the proposal opens there, named, and becomes a workflow.
    await eventually(async () => (await page.evaluate('document.activeElement?.textContent')) === 'Open the proposal in the editor', 'focus on the link to the editor');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/workflows\/new\?project=.*&proposal=/);
    await page.getByText('Opened proposal version 1').waitFor();
    expect(await page.getByLabel('Name').inputValue()).to.equal(plan.name);
    await canvas(page, 3, 2);
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.waitForURL(/\/workflows\/[0-9a-f-]{36}\/edit$/);
    const id = page.url().split('/').slice(-2)[0]!;
    const made = (await t.call('GET', `/api/workflows/${id}`, { token: org.owner.token })).json;
    expect(parse(made.definitionYaml)).to.deep.equal(definitionOf(plan));
    expect(made.name).to.equal(plan.name);
  });

  it('serves the authoring pages at their own addresses (a link to them can be pasted)', async () => {
    for (const path of ['/workflows/new', '/workflows/builder', `/workflows/${workflowId}/edit`]) {
      const r = await t.call('GET', path);
      expect([r.status, r.headers.get('content-type')], path).to.deep.equal([200, 'text/html; charset=utf-8']);
    }
  });

  it('a viewer reads the definition but gets no authoring control, and the API refuses it; another org sees nothing', async () => {
    const { page, watch } = await open(viewer.email);
    await page.goto(`${t.url}/workflows`);
    await page.getByRole('link', { name: 'Release train' }).waitFor();
    expect(await page.getByRole('link', { name: 'New workflow' }).count()).to.equal(0);
    expect(await page.getByRole('link', { name: 'Draft with the builder' }).count()).to.equal(0);
    await page.goto(`${t.url}/workflows/${workflowId}/edit`);
    await canvas(page, 2, 1);
    await page.getByText('Read only: your role may not edit this workflow.').waitFor();
    expect(await editor(page).getAttribute('contenteditable')).to.equal('false');
    for (const name of ['Save version', 'Publish v5', 'Roll back to version 1']) expect(await page.getByRole('button', { name }).count(), name).to.equal(0);
    await check(page, 'workflow-editor-viewer');
    await page.goto(`${t.url}/workflows/new`);
    await page.getByText('Your role may read workflows but not create them.').waitFor();
    expect(await page.getByRole('button', { name: 'Create workflow' }).count()).to.equal(0);
    const refused = await t.call('POST', `/api/projects/${org.projectId}/workflows`, { token: viewer.token, body: { name: 'x', definitionYaml: twoSteps } });
    expect(refused.status, refused.text).to.equal(403);
    const patched = await t.call('PATCH', `/api/workflows/${workflowId}`, { token: viewer.token, body: { definitionYaml: twoSteps } });
    expect(patched.status, patched.text).to.equal(403);

    // Another org's owner: the editor says not found, the API answers 404.
    const outsider = await open(other.owner.email);
    outsider.watch.expectFailure(new RegExp(`/api/workflows/${workflowId}(/versions)?(: 404)?$`));
    await outsider.page.goto(`${t.url}/workflows/${workflowId}/edit`);
    await outsider.page.getByRole('alert').filter({ hasText: 'not found' }).waitFor();
    expect((await t.call('GET', `/api/workflows/${workflowId}`, { token: other.owner.token })).status).to.equal(404);
    expect(watch.consoleErrors).to.deep.equal([]);
  });

  it('redrafts an existing workflow with the builder: the proposal opens in its editor as an unsaved change, saved as a version', async () => {
    const { page } = await open(org.owner.email);
    await page.goto(`${t.url}/workflows/${workflowId}/edit`);
    await canvas(page, 2, 1);
    const versionBefore = (await t.call('GET', `/api/workflows/${workflowId}`, { token: org.owner.token })).json.version as number;
    await page.getByRole('link', { name: 'Redraft with the builder' }).click();
    await page.waitForURL(/\/workflows\/builder\?project=.*&workflow=/);
    await page.getByText('Drafting a new version of an existing workflow').waitFor();
    await page.getByLabel('Goal: what should this workflow do?').fill('Release with a wait');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await page.getByLabel('Outcome').fill('The release is out and announced');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByLabel('Steps, one per line').fill('Plan the release\nShip it');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByLabel('A person approves before the last step').uncheck();
    await page.getByLabel('Wait before continuing (seconds, 0 for none)').fill('30');
    await page.getByRole('button', { name: 'Finish and draft' }).click();
    await canvas(page, 3, 2);
    expect((await t.call('GET', `/api/workflows/${workflowId}`, { token: org.owner.token })).json.version, 'a draft changes no workflow').to.equal(versionBefore);
    await page.getByRole('button', { name: 'Store as proposal' }).click();
    const proposalId = (await page.locator('[data-proposal]').getAttribute('data-proposal'))!;
    await page.getByRole('link', { name: 'Open the proposal in the editor' }).click();
    await page.waitForURL(new RegExp(`/workflows/${workflowId}/edit\\?proposal=${proposalId}$`));
    await page.getByText('Proposal version 1 is open as an unsaved change').waitFor();
    await page.getByText('unsaved changes').waitFor();
    await canvas(page, 3, 2);
    expect((await t.call('GET', `/api/workflows/${workflowId}`, { token: org.owner.token })).json.version, 'opening changes nothing').to.equal(versionBefore);
    await page.getByRole('button', { name: 'Save version' }).click();
    await page.getByText(`Saved as version ${versionBefore + 1}.`).waitFor();
    const proposal = (await t.call('GET', `/api/projects/${org.projectId}/authoring/proposals/${proposalId}`, { token: org.owner.token })).json;
    expect(proposal.proposal.workflowId).to.equal(workflowId);
    const w = (await t.call('GET', `/api/workflows/${workflowId}`, { token: org.owner.token })).json;
    expect(parse(w.definitionYaml)).to.deep.equal(definitionOf(proposal.versions[0].plan as CandidatePlan));
    const versions = (await t.call('GET', `/api/workflows/${workflowId}/versions`, { token: org.owner.token })).json as { changeReason: string | null }[];
    expect(versions[0]!.changeReason).to.equal(`from builder proposal ${proposalId.slice(0, 8)} v1`);
  });
});
