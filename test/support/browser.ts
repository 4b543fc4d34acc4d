import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * Headless Chromium from the machine's `chromium` package (never a downloaded browser), and a watch over a page:
 * console errors, failed requests and requests to any host but the node are collected, so a test can assert there
 * were none. Screenshots go to `test/artifacts/console/` (git-ignored).
 */
export const artifactsDir = fileURLToPath(new URL('../artifacts/console/', import.meta.url));

export function chromiumPath(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('chromium is not installed: apt-get install -y chromium (.ci/run installs it)');
  }
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

export interface PageWatch {
  readonly consoleErrors: string[];
  readonly failedRequests: string[];
  readonly foreignRequests: string[];
  /** Forgets a failure the test caused on purpose (a refusal it wants the page to show). */
  expectFailure(pattern: RegExp): void;
}

export function watchPage(page: Page, origin: string): PageWatch {
  const expected: RegExp[] = [];
  const watch: PageWatch = {
    consoleErrors: [], failedRequests: [], foreignRequests: [],
    expectFailure: (pattern) => { expected.push(pattern); },
  };
  const isExpected = (text: string) => expected.some((p) => p.test(text));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = `${message.text()} @ ${message.location().url}`;
    // The browser logs a refused fetch as a console error too; a refusal the test expects is not an error.
    if (!isExpected(text)) watch.consoleErrors.push(text);
  });
  page.on('pageerror', (error) => watch.consoleErrors.push(`uncaught: ${error.message}`));
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith('data:') && !url.startsWith('blob:')) watch.foreignRequests.push(url);
  });
  page.on('requestfailed', (request) => {
    const failure = request.failure()?.errorText ?? '';
    // A stream, fetch or image cut off by navigating away is the page leaving, not a failure (on a busy machine the
    // header's icon, or the tab's icon the browser fetches as 'other', can still be loading when a test moves on).
    // A missing one answers 404, caught below.
    if (failure === 'net::ERR_ABORTED' && ['eventsource', 'fetch', 'image', 'other'].includes(request.resourceType())) return;
    const line = `${request.method()} ${request.url()}: ${failure}`;
    if (!isExpected(line)) watch.failedRequests.push(line);
  });
  page.on('response', (response) => {
    if (response.status() < 400) return;
    const line = `${response.request().method()} ${response.url()}: ${response.status()}`;
    if (!isExpected(line)) watch.failedRequests.push(line);
  });
  return watch;
}

const require = createRequire(import.meta.url);
let axeSource: string | undefined;

/** Serious and critical axe-core violations on the page as it is now (axe is evaluated, so the page's CSP is kept). */
export async function axeViolations(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  // Evaluated as page text: this file is typed for Node, the expression runs in the page.
  const result = await page.evaluate("axe.run(document, { resultTypes: ['violations'] })") as {
    violations: { id: string; impact: string; help: string; nodes: { target: unknown[] }[] }[];
  };
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')})`);
}

/** A full-page screenshot at 1280 px and at 375 px wide, named after the page. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(artifactsDir, { recursive: true });
  const original = page.viewportSize() ?? { width: 1280, height: 800 };
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: 800 });
    await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
    await page.screenshot({ path: `${artifactsDir}${name}-${width}.png`, fullPage: true });
  }
  await page.setViewportSize(original);
}

/**
 * The page as a person whose system asks for dark colours sees it (the console follows `prefers-color-scheme`):
 * screenshotted as `<name>-dark`, and its serious and critical axe violations there, where contrast is measured
 * against the dark palette. The light scheme is emulated again afterwards.
 */
export async function darkViolations(page: Page, name: string): Promise<string[]> {
  await page.emulateMedia({ colorScheme: 'dark' });
  try {
    if (await page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") !== true) throw new Error('the dark scheme was not emulated');
    const violations = await axeViolations(page);
    await screenshots(page, `${name}-dark`);
    return violations;
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
  }
}

/** Signs in through the page's own form. */
export async function signIn(page: Page, origin: string, email: string, password: string): Promise<Page> {
  await page.goto(`${origin}/sign-in`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
  return page;
}
