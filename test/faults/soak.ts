/**
 * The soak (issue 20): `npm run soak` runs mixed load on private engines for 30 minutes with 20 random faults
 * (SIGKILL and SIGSTOP of each engine, resets, latency and blackholes on each link), then checks the ledger.
 * Prints one JSON line per fault and a verdict: lost, duplicated, RSS growth of each node from the first minute to
 * the end, unhandled rejections (a node's own, which end it, and the runner's).
 *   npm run soak [-- --minutes 30 --faults 20 --nodes 2 --seed 7]
 * `npm test` runs the short variant (test/faults/faults.test.ts).
 */
import { readFileSync } from 'node:fs';
import { startFaultWorld, type FaultWorld } from './world.js';
import { loadOn, msUntil, provisionTenant, readyz, sleep } from './scenario.js';
import { summarise } from './load.js';
import { checkLedger } from './checker.js';

const args = process.argv.slice(2);
const opt = (name: string, fallback: number) => { const i = args.indexOf(`--${name}`); return i >= 0 ? Number(args[i + 1]) : fallback; };
const minutes = opt('minutes', 30);
const faultCount = opt('faults', 20);
const nodeCount = opt('nodes', 1);
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
]);

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
}

async function main(): Promise<void> {
  let runnerUnhandled = 0;
  process.on('unhandledRejection', (err) => { runnerUnhandled += 1; console.error('runner: unhandled rejection', err); });
  const world = await startFaultWorld({ nodes: nodeCount });
  try {
    const tenant = await provisionTenant(world, 10);
    const load = loadOn(world, tenant, { heartbeatsPerSecond: 150, dispatchesPerSecond: 10, mutationsPerSecond: 4, sseReaders: 10 });
    load.start();
    const durationMs = minutes * 60_000;
    const started = Date.now();
    await sleep(Math.min(60_000, durationMs / 10));
    const rssStart = world.nodes.map((n) => rssKb(n.child.pid!));
    const faultsFrom = Date.now();
    const spacing = (durationMs - (faultsFrom - started)) / (faultCount + 1);
    for (let i = 0; i < faultCount; i++) {
      // Each fault starts somewhere in the first half of its slot, so it has the rest to heal.
      await sleep(Math.max(0, faultsFrom + spacing * i + spacing * 0.5 * random() - Date.now()));
      const fault = faults[Math.floor(random() * faults.length)]!;
      const at = Date.now();
      await fault.run(world);
      const readyMs = await msUntil(async () => (await Promise.all(world.nodes.map((n) => readyz(n)))).every((s) => s === 200), 120_000);
      console.log(JSON.stringify({ fault: i + 1, name: fault.name, atSecond: Math.round((at - started) / 1000), readyMsAfterHeal: readyMs ?? null }));
    }
    await sleep(Math.max(0, started + durationMs - Date.now()));
    const rssEnd = world.nodes.map((n) => (n.exited() ? NaN : rssKb(n.child.pid!)));
    await load.stop();
    const verdict = await checkLedger(world.databaseUrl, tenant.orgId, load.ledger);
    const nodeUnhandled = world.nodes.map((n) => n.lines.filter((l) => /unhandled ?rejection/i.test(l)).length);
    console.log(JSON.stringify({
      soak: { minutes, faults: faultCount, nodes: nodeCount, seed: seedUsed },
      acknowledged: verdict.acknowledged, lost: verdict.lostTotal, duplicated: verdict.duplicatedTotal, examples: verdict.examples,
      rssGrowthPercent: rssStart.map((s, i) => Math.round(((rssEnd[i]! - s) / s) * 1000) / 10),
      rssKb: { start: rssStart, end: rssEnd },
      nodesCrashed: world.nodes.filter((n) => n.exited()).map((n) => n.nodeId),
      unhandledRejections: { nodes: nodeUnhandled, runner: runnerUnhandled },
      requests: summarise(load.samples), sseFrames: load.sseFrames, sseReconnects: load.sseReconnects,
    }));
    const failed = verdict.lostTotal + verdict.duplicatedTotal + runnerUnhandled + nodeUnhandled.reduce((a, b) => a + b, 0) > 0 || world.nodes.some((n) => n.exited());
    process.exitCode = failed ? 1 : 0;
  } finally {
    await world.close();
  }
}

main().then(() => process.exit(process.exitCode ?? 0), (err: unknown) => { console.error(err); process.exit(1); });
