/**
 * G9 (issue 19): the Postgres statements one session lifecycle costs, call by call, counted in the driver.
 *
 * Starts a node in this process on a throw-away database of the Postgres at DATABASE_URL (memory cache, in-process
 * transport: only Postgres is counted), wraps `pg`'s `Client.prototype.query`, and runs lifecycles one after another
 * (dispatch, then `claimed`, `running`, `finalizing`, `completed`), each call alone, so every statement issued while a
 * call is in flight belongs to it. Background work (liveness batches, outbox pollers) can land inside a call now and
 * then, so each call's figure is the fewest statements it took over `--lifecycles` runs, and its statements are printed.
 *
 *   npx tsx ops/bench/lifecycle-statements.ts [--lifecycles 5] [--verbose]
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../config.js';
import { createLogger } from '../kernel/logger.js';
import { startNode } from '../node.js';
import { generateMasterKey } from '../secrets.js';

const { values } = parseArgs({ options: { lifecycles: { type: 'string', default: '5' }, verbose: { type: 'boolean', default: false } } });
const runs = Number(values.lifecycles);
if (!Number.isInteger(runs) || runs < 1 || runs > 100) throw new Error('--lifecycles must be an integer in 1..100');

let seen: string[] | undefined;
const original = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(this: pg.Client, config: unknown, ...rest: unknown[]) {
  const text = typeof config === 'string' ? config : (config as { text?: string } | null)?.text ?? '?';
  seen?.push(text.replace(/\s+/g, ' ').slice(0, 110));
  return (original as (...args: unknown[]) => unknown).call(this, config, ...rest);
} as typeof pg.Client.prototype.query;

const postgresUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `troupe_bench_statements_${randomBytes(3).toString('hex')}`;
const admin = new pg.Client({ connectionString: postgresUrl });
await admin.connect();
await admin.query(`create database ${database}`);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-statements-'));
const adminToken = `trpadm_statements_${Date.now()}_0123456789abcdef`;
const config = loadConfig({
  ...process.env, DATABASE_URL: postgresUrl.replace(/\/[^/]*$/, `/${database}`), REDIS_URL: undefined, AMQP_URL: undefined,
  TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, PORT: '0', HOST: '127.0.0.1', TROUPE_DATA_DIR: dataDir,
  TROUPE_NODE_ID: 'bench-statements', TROUPE_LOG_LEVEL: 'warn',
});
const node = await startNode(config, { log: createLogger({ level: 'warn', nodeId: config.nodeId }) });

async function call(pathname: string, token: string, body: unknown): Promise<any> {
  const res = await fetch(new URL(pathname, node.url), {
    method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body),
  });
  const json = await res.json().catch(() => undefined);
  if (res.status >= 300) throw new Error(`POST ${pathname} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Runs `work` and returns the statements issued meanwhile. */
async function counting(work: () => Promise<unknown>): Promise<string[]> {
  seen = [];
  await work();
  const found = seen;
  seen = undefined;
  return found;
}

try {
  const org = await call('/api/admin/orgs', adminToken, { name: 'Statements', owner: { email: 'statements@bench.test' } });
  const daemon = await call('/v1/daemon/register', '', { registrationToken: org.registrationToken, hostname: 'statements', maxAgents: 4 });
  const calls = ['dispatch', 'claimed', 'running', 'finalizing', 'completed'] as const;
  const fewest = new Map<string, string[]>();
  for (let i = 0; i < runs + 2; i += 1) {
    let sessionId = '';
    const measured: Array<[string, string[]]> = [];
    measured.push(['dispatch', await counting(async () => {
      sessionId = (await call('/api/agent-dispatch', org.apiKey.fullKey, { projectId: org.project.id, prompt: 'Fix the flaky test' })).sessionId;
    })]);
    for (const status of calls.slice(1)) {
      measured.push([status, await counting(() => call(`/api/sessions/${sessionId}/status`, daemon.runtimeJwt, { status, workerId: daemon.workerId, costUsd: 0.5 }))]);
    }
    // The first two lifecycles warm the node's caches (credentials, the project, the router's arms).
    if (i < 2) continue;
    for (const [name, statements] of measured) {
      const best = fewest.get(name);
      if (best === undefined || statements.length < best.length) fewest.set(name, statements);
    }
  }
  let total = 0;
  for (const name of calls) {
    const statements = fewest.get(name)!;
    total += statements.length;
    console.log(`${name}: ${statements.length}`);
    if (values.verbose) for (const s of statements) console.log(`    ${s}`);
  }
  console.log(`lifecycle: ${total} statements (fewest of ${runs} per call)`);
} finally {
  await node.close();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.end();
  rmSync(dataDir, { recursive: true, force: true });
}
