/**
 * G10 (issue 19; PERFORMANCE.md "Second round"): what a node costs to keep, run as `npm start` runs it (compiled
 * JavaScript, `node <the start script's node options> build/ops/main.js`; the build is brought up to date first, as
 * `npm start` does).
 *
 * 1. Idle embedded node (PGlite, in-process transport, memory cache): a first start on a fresh data directory
 *    (initdb and every migration), then a second start on it (migrations current), each left idle `--idle` seconds;
 *    VmRSS as it stands and after a full collection (gc-on-signal.mjs). Goal: ≤ 200 MB. With `--baseline <checkout>`
 *    the same from that tree, alternating, for a before/after in one run.
 * 2. Real-engine node (Postgres, Redis, RabbitMQ): `--workers` registered workers heartbeating every 15 s (spread
 *    evenly, as their timers are; from registration on, which keeps their tokens fresh through a long set-up),
 *    `--sessions` session actors dispatched through the node that have since passivated
 *    (TROUPE_PASSIVATE_AFTER_MS=1000), and `--streams` of the workers holding their daemon event stream
 *    (`GET /api/daemon/events`) open, reopened with the worker's current token if the node closes it. Then, after a
 *    full heartbeat cycle, the node's CPU over `--window` seconds as a share of one core, and its VmRSS.
 *    Goal: ≤ 1 GB and ≤ 25 % of a core.
 *
 * Measured nodes run on core 0 (the real-engine node may use both cores for its set-up and is pinned before the
 * window), this process (the load) on core 1. Prints tables; exits 1 when a goal is missed.
 *   npx tsx ops/bench/resident.ts [--idle 10] [--baseline <dir>] [--workers 10000] [--streams 10000]
 *     [--sessions 100000] [--window 30] [--skip-embedded] [--skip-real]
 * DATABASE_URL, REDIS_URL, AMQP_URL default to the local servers; the node gets a throw-away database, a Redis key
 * prefix and a RabbitMQ name prefix of its own, all removed at the end.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import pg from 'pg';
import { printTable, startFlags, uncappedBenchLimits } from './harness.js';
import { generateMasterKey } from '../secrets.js';
import { deleteTopology, shardTopology } from '../../transport/amqp/topology.js';
import {
  aliveSessions, dispatchSessions, heartbeatContinuously, holdStreams, loadAgent, post, registerWorkers, type Heartbeats,
} from './resident-load.js';

const { values } = parseArgs({
  options: {
    idle: { type: 'string', default: '10' },
    baseline: { type: 'string' },
    workers: { type: 'string', default: '10000' },
    streams: { type: 'string', default: '10000' },
    sessions: { type: 'string', default: '100000' },
    window: { type: 'string', default: '30' },
    'skip-embedded': { type: 'boolean', default: false },
    'skip-real': { type: 'boolean', default: false },
  },
});
const int = (value: string | undefined, low: number, high: number, name: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < low || n > high) throw new Error(`--${name} must be an integer in ${low}..${high}`);
  return n;
};
const idleSeconds = int(values.idle, 1, 600, 'idle');
const workerCount = int(values.workers, 1, 100_000, 'workers');
const streamCount = int(values.streams, 0, workerCount, 'streams');
const sessionCount = int(values.sessions, 0, 10_000_000, 'sessions');
const windowSeconds = int(values.window, 5, 600, 'window');
const HEARTBEAT_SECONDS = 15;
const GOAL_IDLE_MB = 200;
const GOAL_LOADED_MB = 1024;
const GOAL_CORE_SHARE = 0.25;

const here = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const trees = [{ name: 'this', root: here }, ...(values.baseline ? [{ name: 'baseline', root: path.resolve(values.baseline) }] : [])];
const postgresUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const amqpUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const tag = randomBytes(3).toString('hex');
const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-resident-'));
const masterKey = generateMasterKey();
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// The load stays off the node's core; streams need a file descriptor each, here and in the node.
spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
const hardLimit = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim();
spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${hardLimit}:${hardLimit}`], { stdio: 'ignore' });

interface Node { readonly child: ChildProcess; readonly port: number; readonly memoryFile: string }

function buildTree(root: string): void {
  process.stderr.write(`bringing the build of ${root} up to date...\n`);
  const built = spawnSync(process.execPath, ['ops/build-current.mjs'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  if (built.status !== 0) throw new Error(`build in ${root} failed`);
}

/**
 * `node build/ops/main.js` of a tree, with a full collection on SIGUSR2; resolves once it is ready. On core 0, or
 * on any core (`pinned: false`) for a long set-up, to be pinned with `pinToCore0` before anything is measured.
 */
function startNode(root: string, env: NodeJS.ProcessEnv, pinned = true): Promise<Node> {
  const memoryFile = path.join(workDir, `memory-${randomBytes(4).toString('hex')}.json`);
  const node = [process.execPath, ...startFlags(root), '--expose-gc', '--import', path.join(here, 'ops/bench/gc-on-signal.mjs'), 'build/ops/main.js'];
  const [command, ...args] = pinned ? ['taskset', '-c', '0', ...node] : node;
  const child = spawn(command!, args, {
    cwd: root,
    env: { ...process.env, ...uncappedBenchLimits, PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info', BENCH_MEMORY_FILE: memoryFile, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error('node did not start within 180 s')), 180_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const ready = /"port":(\d+)[^\n]*troupe node ready/.exec(buffered);
      if (ready) {
        clearTimeout(timer);
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve({ child, port: Number(ready[1]), memoryFile });
      }
      if (buffered.length > 1_000_000) buffered = buffered.slice(-10_000);
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`node exited with ${code} before it was ready`)); });
  });
}

function pinToCore0(node: Node): void {
  spawnSync('taskset', ['-a', '-cp', '0', String(node.child.pid)], { stdio: 'ignore' });
}

function stopNode(node: Node): Promise<void> {
  return new Promise((resolve) => {
    if (node.child.exitCode !== null) return resolve();
    const kill = setTimeout(() => node.child.kill('SIGKILL'), 30_000);
    node.child.once('exit', () => { clearTimeout(kill); resolve(); });
    node.child.kill('SIGTERM');
  });
}

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

/** utime + stime of a process, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Memory { readonly rss: number; readonly rssAfterGc: number; readonly heapTotal: number; readonly external: number }

async function memoryOf(node: Node): Promise<Memory> {
  const pid = node.child.pid!;
  const rss = rssMb(pid);
  process.kill(pid, 'SIGUSR2');
  await sleep(1500);
  const usage = JSON.parse(readFileSync(node.memoryFile, 'utf8')) as { heapTotal: number; external: number };
  return { rss, rssAfterGc: rssMb(pid), heapTotal: usage.heapTotal / 1048576, external: usage.external / 1048576 };
}

async function idleEmbedded(): Promise<boolean> {
  for (const tree of trees) buildTree(tree.root);
  const rows: Array<Record<string, string | number>> = [];
  let met = true;
  for (const tree of trees) {
    const dataDir = mkdtempSync(path.join(workDir, `embedded-${tree.name}-`));
    for (const start of ['first start (initdb, migrations)', 'second start (migrations current)']) {
      const node = await startNode(tree.root, { TROUPE_DATA_DIR: dataDir, TROUPE_MASTER_KEY: masterKey, TROUPE_ADMIN_TOKEN: adminToken });
      await sleep(idleSeconds * 1000);
      const m = await memoryOf(node);
      await stopNode(node);
      rows.push({ tree: tree.name, start, 'RSS MB': Math.round(m.rss), 'RSS after GC MB': Math.round(m.rssAfterGc), 'JS heap MB': Math.round(m.heapTotal), 'external MB': Math.round(m.external) });
      if (tree.name === 'this' && start.startsWith('second')) met = m.rss <= GOAL_IDLE_MB;
    }
  }
  console.log(`\nG10 idle embedded node (compiled, ${idleSeconds} s idle after ready); goal: second start ≤ ${GOAL_IDLE_MB} MB RSS`);
  printTable(rows);
  return met;
}

/**
 * The real-engine node under load (see the header, 2): workers registered and heartbeating, sessions dispatched and
 * passivated, event streams held; then its CPU share and memory over the steady window.
 */
async function loadedRealEngines(): Promise<boolean> {
  buildTree(here);
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  const names = { database: `troupe_bench_resident_${tag}`, cachePrefix: `troupe-bench-resident-${tag}:`, amqpPrefix: `bench-resident-${tag}`, nodeId: `bench-resident-${tag}` };
  await admin.query(`create database ${names.database}`);
  const streams: net.Socket[] = [];
  let node: Node | undefined;
  let heartbeats: Heartbeats | undefined;
  try {
    node = await startNode(here, {
      DATABASE_URL: postgresUrl.replace(/\/[^/]*$/, `/${names.database}`), REDIS_URL: redisUrl, AMQP_URL: amqpUrl,
      TROUPE_CACHE_PREFIX: names.cachePrefix, TROUPE_AMQP_PREFIX: names.amqpPrefix, TROUPE_NODE_ID: names.nodeId, TROUPE_DATA_DIR: path.join(workDir, 'real'),
      TROUPE_MASTER_KEY: masterKey, TROUPE_ADMIN_TOKEN: adminToken, TROUPE_PASSIVATE_AFTER_MS: '1000',
      // One API key dispatches every session: its per-credential limits (decision 0026) are lifted for the set-up.
      TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '100000000', TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
    }, false);
    const { port } = node;
    const org = await post(port, '/api/admin/orgs', adminToken, { name: 'Bench', owner: { email: 'bench@bench.test' } });
    const workers = await registerWorkers(port, org.registrationToken, workerCount);
    const beating = heartbeatContinuously(port, workers, HEARTBEAT_SECONDS);
    heartbeats = beating;
    await dispatchSessions(port, org, sessionCount, tag);
    for (let waited = 0; (await aliveSessions(port)) > 0 && waited < 60; waited += 1) await sleep(1000);
    const stillAlive = await aliveSessions(port);
    const reopened = await holdStreams(port, workers.slice(0, streamCount), streams, () => beating.running);
    pinToCore0(node);
    const failedBeforeWindow = beating.counts.failed;
    const reopenedBeforeWindow = reopened();
    await sleep(HEARTBEAT_SECONDS * 1000);
    const { share, memory } = await steadyWindow(node);
    const heartbeatErrors = beating.counts.failed - failedBeforeWindow;
    const openStreams = streams.filter((socket) => !socket.destroyed).length;
    const streamsReopened = reopened() - reopenedBeforeWindow;
    await beating.stop();
    console.log(`\nG10 real-engine node (Postgres, Redis, RabbitMQ; compiled), steady ${windowSeconds} s window; goal: ≤ ${GOAL_LOADED_MB} MB RSS and ≤ ${GOAL_CORE_SHARE * 100} % of a core`);
    printTable([{
      workers: workerCount, 'heartbeats/s': Math.round(workerCount / HEARTBEAT_SECONDS), 'open streams': openStreams, 'streams reopened': streamsReopened,
      'passivated sessions': sessionCount - stillAlive, 'RSS MB': Math.round(memory.rss), 'RSS after GC MB': Math.round(memory.rssAfterGc),
      'JS heap MB': Math.round(memory.heapTotal), 'CPU % of a core': Math.round(share * 1000) / 10, 'heartbeat errors': heartbeatErrors,
    }]);
    return memory.rss <= GOAL_LOADED_MB && share <= GOAL_CORE_SHARE && heartbeatErrors === 0 && openStreams >= streamCount;
  } finally {
    void heartbeats?.stop();
    for (const s of streams) s.destroy();
    if (node) await stopNode(node);
    await removeRealEngineState(admin, names);
  }
}

/** The node's CPU over the `--window` seconds as a share of one core, and its memory at the end. */
async function steadyWindow(node: Node): Promise<{ share: number; memory: Memory }> {
  const pid = node.child.pid!;
  const cpuBefore = cpuSeconds(pid);
  const wallBefore = performance.now();
  await sleep(windowSeconds * 1000);
  const share = (cpuSeconds(pid) - cpuBefore) / ((performance.now() - wallBefore) / 1000);
  return { share, memory: await memoryOf(node) };
}

/** Deletes what the real-engine node left: its RabbitMQ topology, its Redis keys and its database. */
async function removeRealEngineState(admin: pg.Client, names: { database: string; cachePrefix: string; amqpPrefix: string; nodeId: string }): Promise<void> {
  const connection = await amqp.connect(amqpUrl).catch(() => undefined);
  if (connection) {
    try {
      await deleteTopology(await connection.createChannel(), shardTopology({ prefix: names.amqpPrefix, shardCount: 64, nodeId: names.nodeId, deliveryLimit: 5 }));
    } catch (err) {
      process.stderr.write(`could not delete the bench's RabbitMQ topology: ${(err as Error).message}\n`);
    } finally {
      await connection.close().catch(() => undefined);
    }
  }
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${names.cachePrefix}*`, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  await admin.query(`drop database if exists ${names.database} with (force)`).catch(() => undefined);
  await admin.end();
}

let met = true;
try {
  if (!values['skip-embedded']) met = (await idleEmbedded()) && met;
  if (!values['skip-real']) met = (await loadedRealEngines()) && met;
  console.log(`\nload average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} on ${os.cpus().length} cores`);
} finally {
  loadAgent.destroy();
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(met ? 0 : 1);
