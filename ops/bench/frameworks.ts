/**
 * G7 (PERFORMANCE.md "The framework earns its keep"): the same heartbeat logic on uWS, node:http and Fastify, goal
 * uWS ≥ 1.5× node:http and ≥ 2× Fastify.
 *
 * One node (framework-node.ts) serves its own compiled `POST /api/daemon/heartbeat` on its uWS edge, through
 * node:http and through Fastify: same process, deps, daemons and pipeline, so only the framework differs. Before
 * measuring, each front must give the same answers to a good heartbeat, a bad token and a body its schema refuses.
 * Then wrk drives each in turn with the daemons' real runtime JWTs, interleaved round by round (node on core 0, wrk
 * on core 1). The ratios are per round, req/s and node CPU per request; the goal is judged on the median req/s ratio.
 * Exits 1 when a goal is missed or a front answered anything but 2xx.
 *   npx tsx ops/bench/frameworks.ts [--engine embedded|postgres] [--daemons 10000] [--rounds 5] [--duration 10]
 *     [--warmup 3] [--connections 100]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  cpuUs, median, printTable, requireWrk, runWrk, startFlags, startServer, ThrowAwayDatabases, windowsRow, writeRequestFile, type MeasuredWindow, type RunningServer,
} from './harness.js';
import { createBenchOrg, heartbeatBody, heartbeatLoadOptions, readHeartbeatLoad, registerDaemons, type Daemon } from './daemon-fleet.js';
import { generateMasterKey } from '../secrets.js';

const { values } = parseArgs({ options: heartbeatLoadOptions });
const { engine, daemonCount, rounds, duration, warmup, connections } = readHeartbeatLoad(values);
const postgresUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
requireWrk();

const HEARTBEAT = '/api/daemon/heartbeat';
const here = path.dirname(new URL(import.meta.url).pathname);
const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-frameworks-'));
const adminToken = `trpadm_bench_${Date.now()}_0123456789abcdef`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Waits until a front answers at all (it listens after the node's ready line). */
async function answering(base: string): Promise<void> {
  for (let tries = 0; tries < 300; tries++) {
    try {
      await fetch(`${base}/`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`${base} never answered`);
}

interface Answer { readonly status: number; readonly code: string | undefined; readonly keys: string }
async function post(base: string, token: string, body: string): Promise<Answer> {
  const res = await fetch(`${base}${HEARTBEAT}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  const json = await res.json() as Record<string, unknown>;
  return { status: res.status, code: typeof json.code === 'string' ? json.code : undefined, keys: Object.keys(json).sort().join(',') };
}

/** The fronts must serve the same logic: the same status, error code and reply shape for each case. */
async function assertSameAnswers(fronts: ReadonlyArray<{ name: string; base: string }>, d: Daemon): Promise<void> {
  const cases = [
    { name: 'a heartbeat', token: d.runtimeJwt, body: heartbeatBody(d, 0), status: 200 },
    { name: 'a token not ours', token: `${d.runtimeJwt.slice(0, -4)}AAAA`, body: heartbeatBody(d, 0), status: 401 },
    { name: 'a body its schema refuses', token: d.runtimeJwt, body: JSON.stringify({ workerId: 42 }), status: 400 },
  ];
  for (const c of cases) {
    const answers = await Promise.all(fronts.map(async (f) => ({ front: f.name, ...(await post(f.base, c.token, c.body)) })));
    const first = answers[0]!;
    if (first.status !== c.status || answers.some((a) => a.status !== first.status || a.code !== first.code || a.keys !== first.keys)) {
      throw new Error(`the fronts answer ${c.name} differently: ${JSON.stringify(answers)}`);
    }
  }
}

const servers: RunningServer[] = [];
const databases = new ThrowAwayDatabases(postgresUrl, 'troupe_bench_frameworks');
let failed = false;
try {
  const [nodeHttpPort, fastifyPort] = [await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_DATA_DIR: path.join(workDir, 'node'), PORT: '0', HOST: '127.0.0.1',
    TROUPE_ADMIN_TOKEN: adminToken, TROUPE_LOG_LEVEL: 'info', NODE_HTTP_PORT: String(nodeHttpPort), FASTIFY_PORT: String(fastifyPort),
    // Used only when the caller's environment names a Redis: bench-node then deletes the node's keys at the end.
    BENCH_CACHE_PREFIX: `bench-frameworks-${randomBytes(4).toString('hex')}:`,
  };
  if (engine === 'postgres') env.DATABASE_URL = await databases.create('node');
  const node = await startServer(path.join(here, 'framework-node.ts'), env, '0', startFlags(path.join(here, '../..')));
  servers.push(node);
  const fronts = [
    { name: 'uWS (the node\'s edge)', base: `http://127.0.0.1:${node.port}` },
    { name: 'node:http', base: `http://127.0.0.1:${nodeHttpPort}` },
    { name: 'Fastify', base: `http://127.0.0.1:${fastifyPort}` },
  ];
  for (const f of fronts) await answering(f.base);
  process.stderr.write(`registering ${daemonCount} daemons on ${engine}...\n`);
  const org = await createBenchOrg(fronts[0]!.base, adminToken);
  const daemons = await registerDaemons(fronts[0]!.base, org, daemonCount);
  await assertSameAnswers(fronts, daemons[0]!);
  const file = writeRequestFile(path.join(workDir, 'heartbeats.txt'), daemons.map((d, i) => ({ path: HEARTBEAT, token: d.runtimeJwt, body: heartbeatBody(d, i) })));

  const results = new Map<string, MeasuredWindow[]>(fronts.map((f) => [f.name, []]));
  const ratios = { nodeHttp: [] as number[], fastify: [] as number[], cpuNodeHttp: [] as number[], cpuFastify: [] as number[] };
  for (let round = 1; round <= rounds; round++) {
    for (const f of fronts) {
      const offset = round * 1009;
      await runWrk({ url: f.base, requestFile: file, seconds: warmup, connections, offset });
      const cpuBefore = cpuUs(node.child.pid);
      const r = await runWrk({ url: f.base, requestFile: file, seconds: duration, connections, offset: offset + 5003 });
      const cpuUsPerRequest = (cpuUs(node.child.pid) - cpuBefore) / Math.max(1, r.rps * duration);
      results.get(f.name)!.push({ ...r, cpuUsPerRequest });
      process.stderr.write(`round ${round}/${rounds} ${f.name}: ${Math.round(r.rps)} req/s p50 ${r.p50Ms} ms p99 ${r.p99Ms} ms non2xx ${r.non2xx} errors ${r.errors} node CPU ${cpuUsPerRequest.toFixed(2)} µs/request\n`);
    }
    const [uws, nodeHttp, fastify] = fronts.map((f) => results.get(f.name)!.at(-1)!) as [MeasuredWindow, MeasuredWindow, MeasuredWindow];
    ratios.nodeHttp.push(uws.rps / nodeHttp.rps);
    ratios.fastify.push(uws.rps / fastify.rps);
    ratios.cpuNodeHttp.push(nodeHttp.cpuUsPerRequest / uws.cpuUsPerRequest);
    ratios.cpuFastify.push(fastify.cpuUsPerRequest / uws.cpuUsPerRequest);
  }
  console.log(`\nengine ${engine}, ${daemonCount} daemons, ${rounds} rounds of ${duration}s (+${warmup}s warm-up), wrk -t1 -c${connections}; node core 0, wrk core 1`);
  printTable([...results].map(([name, rs]) => ({ front: name, ...windowsRow(rs) })));
  const rounded = (vs: number[]) => vs.map((v) => v.toFixed(2)).join(' ');
  const goals = [
    { goal: 'G7 uWS / node:http, req/s', values: ratios.nodeHttp, want: 1.5 },
    { goal: 'G7 uWS / Fastify, req/s', values: ratios.fastify, want: 2 },
  ];
  console.log('');
  printTable([
    ...goals.map((g) => ({ goal: g.goal, 'median ratio': median(g.values), rounds: rounded(g.values), wanted: `>= ${g.want}`, met: median(g.values) >= g.want ? 'yes' : 'NO' })),
    { goal: 'node:http / uWS, node CPU per request', 'median ratio': median(ratios.cpuNodeHttp), rounds: rounded(ratios.cpuNodeHttp), wanted: '', met: '' },
    { goal: 'Fastify / uWS, node CPU per request', 'median ratio': median(ratios.cpuFastify), rounds: rounded(ratios.cpuFastify), wanted: '', met: '' },
  ]);
  const bad = [...results].filter(([, rs]) => rs.some((r) => r.non2xx > 0 || r.errors > 0));
  for (const [name] of bad) console.log(`${name} answered non-2xx (or dropped connections)`);
  failed = bad.length > 0 || goals.some((g) => median(g.values) < g.want);
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  await databases.dropAll();
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
