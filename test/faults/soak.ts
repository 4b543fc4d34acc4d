/**
 * The soak (issue 20): `npm run soak` runs mixed load on private engines for 30 minutes with 20 random faults
 * (SIGKILL and SIGSTOP of each engine, resets, latency and blackholes on each link), then checks the ledger.
 * Prints one JSON line per fault and a verdict: lost, duplicated, RSS growth of each node from the warm-up to the
 * end, unhandled rejections (a node's own, which end it, and the runner's).
 *   npm run soak [-- --minutes 30 --faults 20 --nodes 2 --seed 7 --only postgres,redis --passivate-after-s 300
 *     --heap-snapshots <dir>]
 * RSS growth is measured after a full collection at the end of the warm-up (the actors' idle time plus a minute, see
 * `passivateSeconds`) and at the end; faults are spread over the time after the warm-up.
 * `--heap-snapshots` writes each node's heap snapshot to <dir> after the start and end readings (a node stops for
 * seconds while it writes one: expect timeouts around both).
 * `npm test` runs the short variant (test/faults/faults.test.ts).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startFaultWorld, type FaultWorld } from './world.js';
import { loadOn, msUntil, provisionTenant, readyz, sleep } from './scenario.js';
import { summarise, type Sample } from './load.js';
import type { NodeProcess } from '../cluster/processes.js';
import { checkLedger } from './checker.js';

const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => { const i = args.indexOf(`--${name}`); return i >= 0 ? Number(args[i + 1]) : fallback; };
const minutes = opt('minutes', 30);
const faultCount = opt('faults', 20);
const nodeCount = opt('nodes', 1);
/** `--only postgres,redis`: draw faults only among those whose name contains one of these words (to replay one kind). */
const onlyIndex = args.indexOf('--only');
const only = onlyIndex >= 0 ? args[onlyIndex + 1]!.split(',') : undefined;
/**
 * Idle actors are passivated after this long (TROUPE_PASSIVATE_AFTER_MS, the node's default 300 s). Until the load
 * has run that long every session dispatched still has its actor, so the node's memory climbs for the whole period
 * (~8.6 KB of heap per session actor, heap snapshots of a 7-minute soak): that is warm-up, not growth. The baseline
 * is taken one minute after it. Runs shorter than 15 minutes passivate after 60 s, so they reach the steady state.
 */
const passivateSeconds = opt('passivate-after-s', minutes >= 15 ? 300 : 60);
const warmUpMs = Math.min((passivateSeconds + 60) * 1000, (minutes * 60_000) / 2);
const snapshotIndex = args.indexOf('--heap-snapshots');
const snapshotDir = snapshotIndex >= 0 ? path.resolve(args[snapshotIndex + 1]!) : undefined;
let seed = opt('seed', Date.now() % 100_000);
const seedUsed = seed;
/** A small deterministic generator, so a failing soak can be replayed with its seed. */
const random = () => { seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31; return seed / 2 ** 31; };
const between = (lo: number, hi: number) => Math.round(lo + random() * (hi - lo));

type Fault = { name: string; run: (world: FaultWorld) => Promise<void> };
const engines = ['postgres', 'rabbitmq', 'redis'] as const;
const faults: Fault[] = engines.flatMap((e) => [
  { name: `${e} SIGKILL`, run: async (w: FaultWorld) => { await w.engines[e].kill(); await sleep(between(2_000, 8_000)); await w.engines[e].start(); } },
  { name: `${e} SIGSTOP`, run: async (w: FaultWorld) => { w.engines[e].freeze(); await sleep(between(2_000, 12_000)); w.engines[e].thaw(); } },
  { name: `${e} link reset`, run: async (w: FaultWorld) => { w.proxies[e].resetAll(); } },
  { name: `${e} link latency`, run: async (w: FaultWorld) => { w.proxies[e].latencyMs = between(50, 300); await sleep(between(3_000, 8_000)); w.proxies[e].heal(); } },
  { name: `${e} link blackhole`, run: async (w: FaultWorld) => { w.proxies[e].blackhole(true); await sleep(between(2_000, 6_000)); w.proxies[e].heal(); w.proxies[e].resetAll(); } },
]).filter((f) => only === undefined || only.some((word) => f.name.includes(word)));

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
}

// Each node runs with ops/bench/gc-on-signal.mjs preloaded: SIGUSR2 runs a full collection and writes the node's
// memoryUsage() to its file, so RSS can be read with no garbage in it (see `settled`).
const memoryDir = mkdtempSync(path.join(tmpdir(), 'troupe-soak-memory-'));
const gcPreload = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../ops/bench/gc-on-signal.mjs');

/** Memory of one node right after a full collection: RSS and the live JS heap plus external memory, kB. */
async function settled(node: NodeProcess): Promise<{ rssKb: number; liveKb: number }> {
  if (node.exited()) return { rssKb: NaN, liveKb: NaN };
  const file = path.join(memoryDir, 'memory.json');
  rmSync(file, { force: true });
  node.child.kill('SIGUSR2');
  for (let waited = 0; !existsSync(file) && waited < 10_000; waited += 50) await sleep(50);
  await sleep(50);
  const usage = JSON.parse(readFileSync(file, 'utf8')) as { heapUsed: number; external: number };
  return { rssKb: rssKb(node.child.pid!), liveKb: Math.round((usage.heapUsed + usage.external) / 1024) };
}

async function settledAll(nodes: readonly NodeProcess[]): Promise<Array<{ rssKb: number; liveKb: number }>> {
  const out = [];
  // One at a time: the nodes share the memory file.
  for (const n of nodes) out.push(await settled(n));
  if (snapshotDir) for (const n of nodes) await heapSnapshot(n);
  return out;
}

/** Asks a node for a heap snapshot (SIGUSR1, see --heap-snapshots) and waits until the file is written. */
async function heapSnapshot(node: NodeProcess): Promise<void> {
  const count = () => readdirSync(snapshotDir!).filter((f) => f.endsWith('.heapsnapshot') && f.includes(`.${node.child.pid}.`)).length;
  const before = count();
  node.child.kill('SIGUSR1');
  for (let waited = 0; count() === before && waited < 60_000; waited += 200) await sleep(200);
  // The file appears when writing starts; the node answers again when it is done.
  await msUntil(async () => (await readyz(node, 1_000)) !== 0, 60_000);
}

/**
 * The nodes' error lines (pino level ≥ 50) by message and error, with a count: what a 500 or a crash came from.
 * Read as they are written (a node keeps only its last lines).
 */
function collectErrors(nodes: readonly NodeProcess[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of nodes) {
    createInterface({ input: n.child.stdout! }).on('line', (line) => {
      if (!line.includes('"level":5') && !line.includes('"level":6')) return;
      let entry: { msg?: string; err?: { type?: string; message?: string; code?: string } };
      try { entry = JSON.parse(line); } catch { return; }
      const key = `${entry.msg ?? ''}: ${entry.err?.type ?? ''} ${entry.err?.code ?? ''} ${entry.err?.message?.slice(0, 160) ?? ''}`;
      out[key] = (out[key] ?? 0) + 1;
    });
  }
  return out;
}

interface FaultWindow { readonly name: string; readonly from: number; readonly healed: number; readonly ready: number }

/**
 * Where the requests that failed were: per fault, those started from 10 s before it (a request's deadline) to 10 s
 * after the nodes were ready again; the rest are "calm". Counts by operation, outcome and the refusal's code.
 */
function failuresByWindow(samples: readonly Sample[], windows: readonly FaultWindow[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const s of samples) {
    if (s.outcome === 'ok') continue;
    const w = windows.find((f) => s.at >= f.from - 10_000 && s.at <= f.ready + 10_000);
    const key = w ? `${windows.indexOf(w) + 1} ${w.name}` : 'calm';
    const bucket = (out[key] ??= {});
    // The code tells a node behind its load (OVERLOADED) from an engine it cannot reach (…_UNAVAILABLE).
    const name = `${s.op} ${s.outcome}${s.outcome === 'client_error' || s.outcome === 'server_error' ? ` ${s.status}` : ''}${s.code ? ` ${s.code}` : ''}`;
    bucket[name] = (bucket[name] ?? 0) + 1;
  }
  return out;
}

async function main(): Promise<void> {
  if (snapshotDir) mkdirSync(snapshotDir, { recursive: true });
  let runnerUnhandled = 0;
  process.on('unhandledRejection', (err) => { runnerUnhandled += 1; console.error('runner: unhandled rejection', err); });
  const world = await startFaultWorld({
    nodes: nodeCount,
    env: {
      NODE_OPTIONS: `--expose-gc --import ${gcPreload}${snapshotDir ? ` --heapsnapshot-signal=SIGUSR1 --diagnostic-dir=${snapshotDir}` : ''}`,
      BENCH_MEMORY_FILE: path.join(memoryDir, 'memory.json'),
      TROUPE_PASSIVATE_AFTER_MS: String(passivateSeconds * 1000),
    },
  });
  try {
    const errorsLogged = collectErrors(world.nodes);
    const tenant = await provisionTenant(world, 10);
    const load = loadOn(world, tenant, { heartbeatsPerSecond: 150, dispatchesPerSecond: 10, mutationsPerSecond: 4, sseReaders: 10 });
    load.start();
    const durationMs = minutes * 60_000;
    const started = Date.now();
    // RSS of each node every 15 s, MB: the curve tells growth from warm-up.
    const rssSeries: Array<[number, ...number[]]> = [];
    const sampler = setInterval(() => {
      rssSeries.push([Math.round((Date.now() - started) / 1000), ...world.nodes.map((n) => (n.exited() ? NaN : Math.round(rssKb(n.child.pid!) / 1024)))]);
    }, 15_000);
    await sleep(warmUpMs);
    const rssStart = world.nodes.map((n) => rssKb(n.child.pid!));
    const settledStart = await settledAll(world.nodes);
    const faultsFrom = Date.now();
    const spacing = (durationMs - (faultsFrom - started)) / (faultCount + 1);
    const windows: FaultWindow[] = [];
    for (let i = 0; i < faultCount; i++) {
      // Each fault starts somewhere in the first half of its slot, so it has the rest to heal.
      await sleep(Math.max(0, faultsFrom + spacing * i + spacing * 0.5 * random() - Date.now()));
      const fault = faults[Math.floor(random() * faults.length)]!;
      const at = Date.now();
      await fault.run(world);
      const healed = Date.now();
      const readyMs = await msUntil(async () => (await Promise.all(world.nodes.map((n) => readyz(n)))).every((s) => s === 200), 120_000);
      windows.push({ name: fault.name, from: at, healed, ready: Date.now() });
      console.log(JSON.stringify({ fault: i + 1, name: fault.name, atSecond: Math.round((at - started) / 1000), readyMsAfterHeal: readyMs ?? null }));
    }
    await sleep(Math.max(0, started + durationMs - Date.now()));
    const rssEnd = world.nodes.map((n) => (n.exited() ? NaN : rssKb(n.child.pid!)));
    const settledEnd = await settledAll(world.nodes);
    clearInterval(sampler);
    await load.stop();
    const verdict = await checkLedger(world.databaseUrl, tenant.orgId, load.ledger);
    const nodeUnhandled = world.nodes.map((n) => n.lines.filter((l) => /unhandled ?rejection/i.test(l)).length);
    const growth = (from: number, to: number) => Math.round(((to - from) / from) * 1000) / 10;
    console.log(JSON.stringify({
      soak: { minutes, faults: faultCount, nodes: nodeCount, seed: seedUsed },
      acknowledged: verdict.acknowledged, lost: verdict.lostTotal, duplicated: verdict.duplicatedTotal, examples: verdict.examples,
      // The goal's figure: RSS after a full collection, at the end of the warm-up and at the end.
      warmUpSeconds: warmUpMs / 1000, passivateAfterSeconds: passivateSeconds,
      rssGrowthPercent: settledStart.map((s, i) => growth(s.rssKb, settledEnd[i]!.rssKb)),
      rssKb: { settled: { start: settledStart.map((s) => s.rssKb), end: settledEnd.map((s) => s.rssKb) }, raw: { start: rssStart, end: rssEnd } },
      liveHeapAndExternalKb: { start: settledStart.map((s) => s.liveKb), end: settledEnd.map((s) => s.liveKb) },
      rssMbEvery15s: rssSeries,
      nodesCrashed: world.nodes.filter((n) => n.exited()).map((n) => n.nodeId),
      unhandledRejections: { nodes: nodeUnhandled, runner: runnerUnhandled },
      requests: summarise(load.samples), shed: Object.fromEntries(load.shed), sseFrames: load.sseFrames, sseReconnects: load.sseReconnects,
      failures: failuresByWindow(load.samples, windows),
      errorsLogged,
    }));
    const failed = verdict.lostTotal + verdict.duplicatedTotal + runnerUnhandled + nodeUnhandled.reduce((a, b) => a + b, 0) > 0 || world.nodes.some((n) => n.exited());
    process.exitCode = failed ? 1 : 0;
  } finally {
    await world.close();
    rmSync(memoryDir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(process.exitCode ?? 0), (err: unknown) => { console.error(err); process.exit(1); });
