/**
 * The console under load, in a real browser (issue 18 "Performance"):
 * 1. First page load: compressed bytes of script and style the signed-in sessions page fetches (goal ≤ 200 KB).
 * 2. The live session list at 200 status changes per second for 10 s: every change the node acknowledged must reach
 *    the page (none dropped), the rows must end in the node's statuses, and the page must keep drawing (frame gaps
 *    and long tasks measured in the page).
 *
 * The node runs in its own process on core 0 (embedded engines, a fresh data dir); this process (Chromium's driver and
 * the worker simulation, speaking the daemon protocol over HTTP) belongs on core 1: `taskset -c 1 npx tsx
 * ops/bench/console.ts [--engine postgres] [--node-cores 0-1]`. Chromium is Debian's (`apt-get install -y chromium`). Exits non-zero when a goal is missed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';
import pg from 'pg';
import { generateAdminToken, generateMasterKey } from '../secrets.js';
import { startServer, type RunningServer } from './harness.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' }, seconds: { type: 'string', default: '10' }, engine: { type: 'string', default: 'embedded' },
    // Cores the node may use (taskset list); PERFORMANCE.md's method gives it core 0, a busy machine may need both.
    'node-cores': { type: 'string', default: '0' },
  },
});
const postgres = values.engine === 'postgres';
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const TICK_MS = 100;
const LIFECYCLE = ['claimed', 'running', 'finalizing', 'completed'] as const;
const FIRST_LOAD_GOAL = 200 * 1024;
const here = path.dirname(fileURLToPath(import.meta.url));
const password = 'bench-password-123';

async function call(base: string, method: string, route: string, init: { token?: string; body?: unknown } = {}): Promise<any> {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-console-'));
const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const schema = `troupe_bench_console_${process.pid}`;
const adminToken = generateAdminToken();
let node: RunningServer | undefined;
const browser = await chromium.launch({
  executablePath: execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim(),
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
let failed = false;
try {
  node = await startServer(path.join(here, '../main.ts'), {
    TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, TROUPE_DATA_DIR: workDir, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info',
    // The drive dispatches far more than one credential's default 120 a minute; rate limits have tests of their own.
    TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
    // A schema of its own on the machine's Postgres, dropped afterwards (`--engine postgres`).
    ...(postgres ? { DATABASE_URL: POSTGRES_URL, TROUPE_DATABASE_SCHEMA: schema } : {}),
  }, values['node-cores']);
  const base = `http://127.0.0.1:${node.port}`;
  const org = await call(base, 'POST', '/api/admin/orgs', { token: adminToken, body: { name: 'Bench', owner: { email: 'bench@bench.test', password } } });
  const apiKey = org.apiKey.fullKey as string;
  const projectId = org.project.id as string;
  const worker = await call(base, 'POST', '/v1/daemon/register', { body: { registrationToken: org.registrationToken, hostname: 'bench', maxAgents: 1000 } });

  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(`${base}/sign-in`);
  await page.getByLabel('Email').fill('bench@bench.test');
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('No sessions yet.').waitFor();

  // 1. First load of the signed-in page, cold: every script and style it fetches, as sent (compressed).
  const firstLoad = await (await browser.newContext({ storageState: await page.context().storageState() })).newPage();
  let firstLoadBytes = 0;
  const loaded: string[] = [];
  firstLoad.on('requestfinished', (request) => {
    const type = request.resourceType();
    if (type !== 'script' && type !== 'stylesheet') return;
    void request.sizes().then((sizes) => { firstLoadBytes += sizes.responseBodySize; loaded.push(new URL(request.url()).pathname); });
  });
  await firstLoad.goto(`${base}/sessions`);
  await firstLoad.getByText('No sessions yet.').waitFor();
  await firstLoad.waitForTimeout(200);
  await firstLoad.close();

  // 2. The live list under load. The page measures its own frames: gaps between animation frames and long tasks.
  await page.getByText('Live', { exact: true }).waitFor();
  await page.evaluate(`(() => {
    window.benchFrames = []; window.benchLongTasks = 0; let last = performance.now();
    const loop = (now) => { window.benchFrames.push(now - last); last = now; requestAnimationFrame(loop); };
    requestAnimationFrame(loop);
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.benchLongTasks += e.duration; }).observe({ entryTypes: ['longtask'] });
  })()`);

  // CPU time of Chromium's renderer processes (not wall clock): what the page costs, even on a machine shared with
  // other work, where wall-clock frame gaps also measure the other work.
  const browserCdp = await browser.newBrowserCDPSession();
  const rendererCpuSeconds = async () => {
    const { processInfo } = await browserCdp.send('SystemInfo.getProcessInfo') as { processInfo: { type: string; cpuTime: number }[] };
    return processInfo.filter((p) => p.type === 'renderer').reduce((sum, p) => sum + p.cpuTime, 0);
  };
  // The idle page (drawing frames, keeping its streams) as a baseline, measured over the same wall time as the drive.
  const idleStart = await rendererCpuSeconds();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  const idleCpuMs = ((await rendererCpuSeconds()) - idleStart) * 1000;
  const cpuBefore = await rendererCpuSeconds();

  // Each tick starts its requests without waiting for the previous tick's: the offered rate stays 200/s while the
  // node keeps up, and what it cannot keep up with shows as fewer acknowledgements, not as a slower driver.
  const perTick = (RATE * TICK_MS) / 1000 / (LIFECYCLE.length + 1);
  let ready: { id: string; step: number }[] = [];
  const outstanding = new Set<Promise<void>>();
  let acknowledged = 0;
  // A refused request ends the drive through the `finally` below (which stops the node), not as an unhandled
  // rejection that would end this process and leave the node running.
  let failure: unknown;
  const track = (p: Promise<void>) => {
    const settled: Promise<void> = p.catch((err: unknown) => { failure ??= err; }).finally(() => outstanding.delete(settled));
    outstanding.add(settled);
  };
  const advance = (s: { id: string; step: number }) => track((async () => {
    await call(base, 'POST', `/api/sessions/${s.id}/status`, { token: worker.runtimeJwt, body: { status: LIFECYCLE[s.step], workerId: worker.workerId } });
    acknowledged += 1;
    if (s.step + 1 < LIFECYCLE.length) ready.push({ id: s.id, step: s.step + 1 });
  })());
  const started = Date.now();
  let owed = 0;
  for (let tick = 0; tick < (SECONDS * 1000) / TICK_MS && failure === undefined; tick++) {
    const due = started + tick * TICK_MS;
    if (Date.now() < due) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    owed += perTick;
    const fresh = Math.floor(owed);
    owed -= fresh;
    for (let i = 0; i < fresh; i++) {
      track((async () => {
        const r = await call(base, 'POST', '/api/agent-dispatch', { token: apiKey, body: { projectId, prompt: 'bench lifecycle' } });
        acknowledged += 1;
        ready.push({ id: r.sessionId, step: 0 });
      })());
    }
    const due_ = ready;
    ready = [];
    for (const s of due_) advance(s);
  }
  const driveSeconds = (Date.now() - started) / 1000;
  const ackedWhileDriving = acknowledged;
  // Let what is in flight finish, so every dispatched session ends completed.
  while (failure === undefined && (outstanding.size > 0 || ready.length > 0)) {
    const due_ = ready;
    ready = [];
    for (const s of due_) advance(s);
    await Promise.race([...outstanding, new Promise((resolve) => setTimeout(resolve, 50))]);
  }
  if (failure !== undefined) throw failure;
  const deadline = Date.now() + 10_000;
  let applied = 0;
  while (Date.now() < deadline) {
    applied = Number(await page.locator('table.list').getAttribute('data-events-applied'));
    if (applied >= acknowledged) break;
    await page.waitForTimeout(100);
  }
  const pageCpuMs = ((await rendererCpuSeconds()) - cpuBefore) * 1000;
  const wallSeconds = (Date.now() - started) / 1000;
  const overIdleMs = Math.max(0, pageCpuMs - idleCpuMs * (wallSeconds / SECONDS));
  const stale = await page.evaluate(`[...document.querySelectorAll('tr[data-session] .status')].filter((s) => s.textContent !== 'completed').length`) as number;
  const rows = await page.locator('tr[data-session]').count();
  const frames = (await page.evaluate('window.benchFrames.slice(2)') as number[]).sort((a, b) => a - b);
  const longTasks = await page.evaluate('window.benchLongTasks') as number;
  const pct = (p: number) => frames[Math.min(frames.length - 1, Math.floor(frames.length * p))] ?? 0;

  const rows_: [string, string][] = [
    ['first load: script + style, compressed', `${(firstLoadBytes / 1024).toFixed(1)} KB (${loaded.sort().join(', ')})`],
    ['status changes asked for', `${RATE}/s for ${SECONDS} s`],
    ['status changes acknowledged by the node', `${acknowledged} (${(ackedWhileDriving / driveSeconds).toFixed(0)}/s while driving)`],
    ['status changes applied by the page', `${applied}`],
    ['dropped', `${Math.max(0, acknowledged - applied)}`],
    ['rows shown / rows not in their final status', `${rows} / ${stale}`],
    ['frame gap p50 / p99 / max', `${pct(0.5).toFixed(1)} / ${pct(0.99).toFixed(1)} / ${(frames[frames.length - 1] ?? 0).toFixed(1)} ms (${frames.length} frames)`],
    ['long tasks (> 50 ms) in total', `${longTasks.toFixed(0)} ms over ${driveSeconds.toFixed(1)} s`],
    ['page CPU, idle page for the same time', `${(idleCpuMs * (wallSeconds / SECONDS)).toFixed(0)} ms (${(idleCpuMs / SECONDS / 10).toFixed(1)} % of a core)`],
    ['page CPU under load (renderer processes)', `${pageCpuMs.toFixed(0)} ms over ${wallSeconds.toFixed(1)} s; above idle ${overIdleMs.toFixed(0)} ms = ${(overIdleMs / Math.max(1, applied)).toFixed(3)} ms per status change (${((overIdleMs / Math.max(1, applied)) * RATE / 10).toFixed(1)} % of a core at ${RATE}/s)`],
  ];
  const width = Math.max(...rows_.map(([k]) => k.length));
  process.stdout.write(`console bench (Chromium ${browser.version()}, node on ${postgres ? 'Postgres' : 'embedded engines'}, cores ${values['node-cores']})\n`);
  for (const [k, v] of rows_) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
  const misses = [
    firstLoadBytes > FIRST_LOAD_GOAL ? 'first load over 200 KB' : '',
    applied < acknowledged ? 'events dropped' : '',
    stale > 0 ? 'rows not in their final status' : '',
    pct(0.99) > 100 ? 'p99 frame gap over 100 ms (the page froze)' : '',
    ackedWhileDriving / driveSeconds < RATE * 0.9 ? `the node acknowledged under 90 % of ${RATE}/s (the load was not applied)` : '',
  ].filter(Boolean);
  process.stdout.write(misses.length === 0 ? 'all goals met\n' : `missed: ${misses.join('; ')}\n`);
  failed = misses.length > 0;
} catch (err) {
  process.stderr.write(`console bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  failed = true;
} finally {
  await browser.close();
  await node?.stop();
  rmSync(workDir, { recursive: true, force: true });
  if (postgres) {
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`drop schema if exists "${schema}" cascade`).finally(() => admin.end());
  }
}
process.exit(failed ? 1 : 0);
