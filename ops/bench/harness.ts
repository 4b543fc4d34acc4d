import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';

/**
 * Shared pieces of the benchmarks (see ../shared/PERFORMANCE.md "Method"): servers run in their own process pinned to
 * core 0, the load generator runs here (start the bench with `taskset -c 1`), every run is bounded in time, and every
 * process started is stopped.
 */
/**
 * The per-worker and per-org ceilings an operator sets (decision 0082) are not what the benchmarks measure: a bench
 * drives a few simulated workers far harder than a real one, and opens thousands of streams in one org.
 */
export const uncappedBenchLimits: NodeJS.ProcessEnv = {
  TROUPE_RATE_LIMIT_WORKER_HEARTBEATS_PER_MINUTE: '100000000',
  TROUPE_RATE_LIMIT_WORKER_REPORTS_PER_MINUTE: '100000000',
  TROUPE_STREAMS_PER_ORG: '1000000',
};

export interface RunningServer {
  readonly port: number;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The node options `npm start` gives (`exec node <options> ops/start.mjs` in the tree's package.json), so a measured
 * node runs as a started one does: V8's helper threads (--v8-pool-size), its young generation (--max-semi-space-size)
 * and source maps all change what it costs and keeps.
 */
export function startFlags(root: string): string[] {
  const script = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const match = /\bnode\s+(.*?)\s*ops\/start\.mjs/.exec(script);
  if (!match) throw new Error(`cannot read the node options from ${root}'s start script: ${script}`);
  return match[1]!.split(/\s+/).filter((flag) => flag.startsWith('--'));
}

// An embedded node migrates its database at start: at a load average of 12 on two cores that took over a minute.
const STARTUP_TIMEOUT_MS = 180_000;

/** Starts `tsx <script>` pinned to one core and waits for the line `listening <port>` (or the node's ready log). */
export async function startServer(script: string, env: NodeJS.ProcessEnv = {}, core = '0', nodeArgs: readonly string[] = []): Promise<RunningServer> {
  const child = spawn('taskset', ['-c', core, process.execPath, ...nodeArgs, '--import', 'tsx', script], {
    env: { ...process.env, ...uncappedBenchLimits, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    // A server that did not start is stopped here: the caller never gets the handle it would stop it with.
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${script} did not start within ${STARTUP_TIMEOUT_MS} ms`)); }, STARTUP_TIMEOUT_MS);
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString();
      const plain = /listening (\d+)/.exec(buffered);
      const fromLog = /"port":(\d+)[^\n]*troupe node ready/.exec(buffered);
      const match = plain ?? fromLog;
      if (match) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        resolve(Number(match[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before listening`));
    });
  });
  return {
    port,
    child,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      // A node drains for up to its shutdown grace (10 s) and then writes its --cpu-prof profile: killed sooner, it
      // writes none (SSE runs at 10,000 streams lost theirs).
      const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.once('exit', () => { clearTimeout(kill); resolve(); });
      child.kill('SIGTERM');
    }),
  };
}

export interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly errors: number;
}

export interface LoadOptions {
  readonly url: string;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly connections?: number;
  readonly durationSeconds: number;
}

export async function load(opts: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    ...(opts.body === undefined ? {} : { body: opts.body }),
    connections: opts.connections ?? 100,
    duration: opts.durationSeconds,
    pipelining: 1,
  });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export function printTable(rows: ReadonlyArray<Record<string, string | number>>): void {
  const columns = Object.keys(rows[0] ?? {});
  const cell = (v: string | number) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : v);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c] ?? '').length)));
  const line = (values: string[]) => `| ${values.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(columns));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) console.log(line(columns.map((c) => cell(row[c] ?? ''))));
}

const ROTATE_SCRIPT = path.join(path.dirname(new URL(import.meta.url).pathname), 'rotate.lua');

/**
 * wrk is the load generator: autocannon, in Node on one core, saturates at about 7k req/s, far below the ceilings
 * it is meant to measure. Exits the process with a clear message when wrk is not installed.
 */
export function requireWrk(): void {
  const probe = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (probe.error) {
    process.stderr.write('wrk is not installed. Install it with `apt-get install -y wrk` (Debian/Ubuntu) or `brew install wrk`.\n');
    process.exit(2);
  }
}

/** One POST request for `writeRequestFile`: the bearer token and JSON body it carries. */
export interface PostRequest {
  readonly path: string;
  readonly token: string;
  readonly body: string;
}

/** Writes requests in the line format `rotate.lua` reads (`path<TAB>token<TAB>body`). */
export function writeRequestFile(file: string, requests: readonly PostRequest[]): string {
  for (const r of requests) {
    if (/[\t\n]/.test(r.path + r.token + r.body)) throw new Error('a benchmark request may not contain tabs or newlines');
  }
  writeFileSync(file, requests.map((r) => `${r.path}\t${r.token}\t${r.body}`).join('\n') + '\n');
  return file;
}

export interface WrkOptions {
  readonly url: string;
  readonly requestFile: string;
  readonly seconds: number;
  readonly connections: number;
  /** Core the load generator is pinned to. @default '1' */
  readonly core?: string;
  /** Where in the request file to start. */
  readonly offset?: number;
}

export interface WrkResult {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  /** Socket errors and timeouts. */
  readonly errors: number;
}

/** One bounded `taskset -c 1 wrk -t1 -c<n>` run rotating through the request file. */
export async function runWrk(opts: WrkOptions): Promise<WrkResult> {
  const args = ['-c', opts.core ?? '1', 'wrk', '-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--timeout', '5s',
    '-s', ROTATE_SCRIPT, opts.url, '--', opts.requestFile, String(opts.offset ?? 0)];
  const child = spawn('taskset', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
  const kill = setTimeout(() => child.kill('SIGKILL'), (opts.seconds + 30) * 1000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(kill);
  const line = /WRKJSON (\{.*\})/.exec(out);
  if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}): ${err || out}`);
  const r = JSON.parse(line[1]!) as Record<string, number>;
  return {
    rps: r.requests! / (r.durationUs! / 1e6),
    p50Ms: r.p50Us! / 1000,
    p99Ms: r.p99Us! / 1000,
    non2xx: r.non2xx!,
    errors: r.connectErrors! + r.readErrors! + r.writeErrors! + r.timeouts!,
  };
}

/** Requests answered 5xx so far, from the node's own `troupe_http_request_duration_seconds` counts. */
export async function serverErrorCount(baseUrl: string, route: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('troupe_http_request_duration_seconds_count{')) continue;
    if (!line.includes(`route="${route}"`) || !/status="5\d\d"/.test(line)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** CPU time a process has used, user and system, in µs (from /proc: robust on a busy machine, unlike req/s). */
export function cpuUs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** A wrk window with the server's CPU (user + system) per request answered; NaN when the server's pid is unknown. */
export interface MeasuredWindow extends WrkResult { readonly cpuUsPerRequest: number }

/** One table row of a target's windows: medians of its rates, latencies and CPU, and its failures summed. */
export function windowsRow(rs: readonly MeasuredWindow[]): Record<string, string | number> {
  return {
    'req/s (median)': Math.round(median(rs.map((r) => r.rps))),
    'p50 ms': median(rs.map((r) => r.p50Ms)),
    'p99 ms': median(rs.map((r) => r.p99Ms)),
    'node CPU µs/req': rs.some((r) => Number.isNaN(r.cpuUsPerRequest)) ? '' : median(rs.map((r) => r.cpuUsPerRequest)),
    'non-2xx': rs.reduce((n, r) => n + r.non2xx, 0),
    errors: rs.reduce((n, r) => n + r.errors, 0),
  };
}

/**
 * Databases a bench makes on the Postgres server `serverUrl` names (a node's, a ceiling's), each `<prefix>_<label>_<random>`,
 * and drops in its `finally` (`dropAll`), so a run leaves nothing behind. Connects on first use.
 */
export class ThrowAwayDatabases {
  private admin: Promise<pg.Client> | undefined;
  private readonly names: string[] = [];

  constructor(private readonly serverUrl: string, private readonly prefix: string) {}

  /** A new empty database for `label`; answers its URL. */
  async create(label: string): Promise<string> {
    const admin = await (this.admin ??= this.connect());
    const name = `${this.prefix}_${label.replace(/\W/g, '_')}_${randomBytes(4).toString('hex')}`;
    await admin.query(`create database ${name}`);
    this.names.push(name);
    return this.serverUrl.replace(/\/[^/]*$/, `/${name}`);
  }

  async dropAll(): Promise<void> {
    if (this.admin === undefined) return;
    const admin = await this.admin;
    for (const name of this.names.splice(0)) await admin.query(`drop database if exists ${name} with (force)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }

  private async connect(): Promise<pg.Client> {
    const admin = new pg.Client({ connectionString: this.serverUrl });
    await admin.connect();
    return admin;
  }
}

/** A call to the node as a client makes it; a reply that is not 2xx fails the bench with its body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function call(base: string, method: string, route: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${route}`, {
    method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** The p-th percentile (0–100) of `values`, nearest rank. */
export const pct = (values: readonly number[], p: number): number => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

/** Drops a bench's own Postgres schema (made with TROUPE_DATABASE_SCHEMA) and everything in it. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try { await client.query(`drop schema if exists "${schema}" cascade`); } finally { await client.end(); }
}

/** Runs a bench's `main`, then its `cleanup` whatever happened, and exits with main's code (1 after an error). */
export function runBench(main: () => Promise<number>, cleanup: () => Promise<void>): void {
  main().then(async (code) => { await cleanup(); process.exit(code); }, async (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    await cleanup();
    process.exit(1);
  });
}
