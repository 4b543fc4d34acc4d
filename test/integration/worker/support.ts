import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

/**
 * `troupe worker` as a real OS process (`node ops/cli/bin.js worker … --log-format json`), its JSON log lines kept
 * for assertions; and the small HTTP helpers the worker tests share. Every process started here is stopped by
 * `stopWorkers`.
 */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const echoAgent = path.join(repoRoot, 'ops/cli/worker/examples/echo-agent.mjs');

export interface LogLine { readonly time: string; readonly level: string; readonly event: string; readonly msg: string; readonly sessionId?: string; readonly [k: string]: unknown }

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[];
  readonly stateDir: string;
  /** The first log line (from the start) matching, or a rejection after `timeoutMs`. */
  waitFor(match: (l: LogLine) => boolean, timeoutMs?: number, what?: string): Promise<LogLine>;
  /** The process started: the worker, or with `viaNpx` the npx in front of it. */
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited(): boolean;
  /** The worker's log has ended: every process holding it (the worker itself, however started) is gone. */
  readonly logClosed: Promise<void>;
}

const running = new Set<ChildProcess>();

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `troupe-${prefix}-`));
}

export function startWorker(opts: {
  /** `null`: no `--agent-command` (an `--agent` preset in `args`). */
  url: string; registrationToken: string; agentCommand?: string | null; capacity?: number; name?: string; stateDir?: string;
  args?: string[]; env?: NodeJS.ProcessEnv;
  /** Started as the README starts it, `npx troupe worker …`, instead of `node ops/cli/bin.js worker …`. */
  viaNpx?: boolean;
  /** An installed `troupe-worker` (the worker package), run directly with the same flags. */
  executable?: string;
}): WorkerProcess {
  const stateDir = opts.stateDir ?? tempDir('worker');
  const workerArgs = [
    'worker', '--url', opts.url, '--registration-token', opts.registrationToken,
    ...(opts.agentCommand === null ? [] : ['--agent-command', opts.agentCommand ?? `node ${echoAgent}`]), '--capacity', String(opts.capacity ?? 4),
    '--name', opts.name ?? 'test-worker', '--state-dir', stateDir, '--log-format', 'json', '--verbose', ...(opts.args ?? []),
  ];
  const [command, args] = opts.executable !== undefined ? [opts.executable, workerArgs.slice(1)]
    : opts.viaNpx ? ['npx', ['troupe', ...workerArgs]] : [process.execPath, [path.join(repoRoot, 'ops/cli/bin.js'), ...workerArgs]];
  const child = spawn(command, args, {
    cwd: repoRoot, env: { ...process.env, TROUPE_WORKER_BACKOFF_CAP_MS: '2000', ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let exited = false;
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => { exited = true; running.delete(child); resolve({ code, signal }); });
  });
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  const logClosed = new Promise<void>((resolve) => child.stderr!.once('close', () => resolve()));
  createInterface({ input: child.stderr! }).on('line', (text) => {
    try {
      lines.push(JSON.parse(text) as LogLine);
    } catch {
      lines.push({ time: '', level: 'raw', event: 'raw', msg: text });
    }
    for (const w of [...waiters]) w();
  });
  child.stdout!.resume();
  return {
    child, lines, stateDir, exit, exited: () => exited, logClosed,
    waitFor(match, timeoutMs = 10_000, what = 'a log line') {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (!found) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          const telling = lines.filter((l) => l.level !== 'debug' || !/^(stream\.lost|poll\.failed)$/.test(l.event));
          reject(new Error(`${what}: not within ${timeoutMs} ms; log:\n${telling.slice(-40).map((l) => JSON.stringify(l)).join('\n')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

export async function killWorker(w: WorkerProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (w.exited()) return;
  w.child.kill(signal);
  await w.exit;
}

export async function stopWorkers(): Promise<void> {
  await Promise.all([...running].map(async (child) => {
    const gone = once(child, 'exit');
    child.kill('SIGKILL');
    await gone;
  }));
}

/**
 * Whether any process of the group led by `pid` still runs. Read from /proc, because a killed process whose parent
 * died stays a zombie (state Z) until init reaps it, which `kill(-pid, 0)` still counts.
 */
export function groupAlive(pid: number): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try { stat = readFileSync(`/proc/${entry}/stat`, 'utf8'); } catch { continue; }
    // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses, so parse after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pid && state !== 'Z') return true;
  }
  return false;
}

/** Kills what an agent left behind (a SIGKILLed worker's agents keep running, as on a real machine). */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
}

export interface Api {
  call(method: string, route: string, init?: { token?: string; body?: unknown }): Promise<{ status: number; json: any; text: string }>;
}

export function api(url: string): Api {
  return {
    async call(method, route, init = {}) {
      const res = await fetch(`${url}${route}`, {
        method,
        headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        signal: AbortSignal.timeout(15_000),
      });
      const text = await res.text();
      let json: any;
      try { json = JSON.parse(text); } catch { json = undefined; }
      return { status: res.status, json, text };
    },
  };
}

export interface ProvisionedOrg { orgId: string; projectId: string; ownerToken: string; apiKey: string; registrationToken: string }

export async function provision(a: Api, adminToken: string, name = 'Acme'): Promise<ProvisionedOrg> {
  const created = await a.call('POST', '/api/admin/orgs', { token: adminToken, body: { name, owner: { email: `owner-${Math.random().toString(36).slice(2)}@${name.toLowerCase()}.test` } } });
  expect(created.status, created.text).to.equal(201);
  const j = created.json;
  return { orgId: j.org.id, projectId: j.project.id, ownerToken: j.userToken, apiKey: j.apiKey.fullKey, registrationToken: j.registrationToken };
}

export async function dispatch(a: Api, org: ProvisionedOrg, prompt = 'Fix ENG-1', extra: Record<string, unknown> = {}): Promise<string> {
  const res = await a.call('POST', '/api/agent-dispatch', { token: org.apiKey, body: { projectId: org.projectId, prompt, ...extra } });
  expect(res.status, res.text).to.equal(201);
  return res.json.sessionId as string;
}

export async function detail(a: Api, org: ProvisionedOrg, id: string): Promise<any> {
  const res = await a.call('GET', `/api/public/sessions/${id}`, { token: org.apiKey });
  expect(res.status, res.text).to.equal(200);
  return res.json;
}

/** Polls the session's detail until its status is one of `statuses`. */
export async function untilStatus(a: Api, org: ProvisionedOrg, id: string, statuses: string[], timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = await detail(a, org, id);
    if (statuses.includes(d.status)) return d;
    if (Date.now() > deadline) throw new Error(`session ${id} is ${d.status}, not ${statuses.join('|')}, after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function eventually(what: string, timeoutMs: number, probe: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The p-th percentile (0–100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Drops a schema a node process worked in. */
export async function dropSchema(schema: string): Promise<void> {
  const { createDb } = await import('../../../storage/db.js');
  const { engines } = await import('../../support/engines.js');
  const admin = await createDb({ databaseUrl: engines.postgres });
  try { await admin.raw(`drop schema if exists "${schema}" cascade`); } finally { await admin.destroy(); }
}
