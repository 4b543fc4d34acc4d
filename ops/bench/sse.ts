// Benchmark (PERFORMANCE.md G6, issue 3 "SSE fan-out"): N streams (default 10,000) on the credential rotate stream
// `GET /api/daemon/credentials/stream` (runtime JWTs of daemons registered in a few orgs; a rotation is a per-org
// broadcast) against a uWS SSE ceiling (ceilings/uws-sse.ts) broadcasting to the same number of groups, interleaved
// round by round. Servers run in their own process pinned to core 0; this process is the load and pins itself to
// core 1. Clients are raw sockets (a GET written by hand, frames counted by their `data: ` lines): fetch would cost
// more than the servers being measured.
// Per round and server: memory per stream (VmRSS less the JS heap's unused committed space, and the live JS heap plus
// external memory, before and after opening the second half of the streams, each read after a full collection the
// server runs on SIGUSR2, see gc-on-signal.mjs; the figure is the larger of the two deltas, see `perStream`), delivered events/s while the
// server publishes as fast as it can (the node: concurrent `POST /api/daemon/credentials/rotate` calls through the
// real route, cycling orgs), and the latency from the publish call to the frame on each stream of the group; then,
// with all of them still open, the latency to the one stream of an org that has a single daemon (`--lone-probes`
// events), which is what a daemon of a small org sees: a broadcast to 1,000 streams takes, on these VMs, as long as
// the kernel needs for 1,000 loopback sends, whoever makes them (the ceiling's own p99 reads 40 to 120 ms).
// Prints one table and the goals; exits 1 when a goal is missed.
//   npx tsx ops/bench/sse.ts [--streams 10000] [--orgs 10] [--daemons-per-org 10] [--rounds 3] [--duration 5]
//     [--probes 20] [--lone-probes 100] [--concurrency 16] [--cpu-prof <dir>] [--baseline <checkout>]
// --baseline <checkout> (another worktree of this repository, node_modules linked) measures that checkout's node too,
// in every round right after this tree's, and prints its event rate / ceiling and p99 beside this tree's.
// With --cpu-prof the node is profiled, and <dir>/windows.jsonl names each round's latency probes and publishing
// window ('troupe rotate stream probes', 'troupe rotate stream publishing') for ops/bench/cpuprofile-top.ts --windows.
// File descriptors: this process and each server hold one per stream; the script raises its own and its
// children's soft `nofile` limit to the hard limit with prlimit(1) and refuses to run when that is too low.
// The parts: sse-subjects.ts (the servers and how each is published to), sse-stream-socket.ts (the clients),
// sse-measure.ts (one round against one server), sse-report.ts (what is printed).
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { RunningServer } from './harness.js';
import { measure, type RoundResult } from './sse-measure.js';
import { printBaseline, printGoals, printServers, roundLine } from './sse-report.js';
import { startCeilingSubject, startNodeSubject } from './sse-subjects.js';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '10000' },
    orgs: { type: 'string', default: '10' },
    'daemons-per-org': { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    probes: { type: 'string', default: '20' },
    'lone-probes': { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '16' },
    'cpu-prof': { type: 'string' },
    baseline: { type: 'string' },
  },
});
const streamCount = Number(values.streams);
const orgCount = Number(values.orgs);
const daemonsPerOrg = Number(values['daemons-per-org']);
const rounds = Number(values.rounds);
const duration = Number(values.duration);
const probes = Number(values.probes);
const loneProbes = Number(values['lone-probes']);
const concurrency = Number(values.concurrency);
for (const [name, v] of Object.entries({ streamCount, orgCount, daemonsPerOrg, rounds, duration, probes, loneProbes, concurrency })) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer`);
}

// Measured windows in CLOCK_MONOTONIC µs (the clock of a .cpuprofile's timestamps), written with --cpu-prof.
const windowsFile = values['cpu-prof'] ? path.join(path.resolve(values['cpu-prof']), 'windows.jsonl') : undefined;
if (windowsFile) mkdirSync(path.dirname(windowsFile), { recursive: true });
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
function measured(name: string, fromUs: number): void {
  if (windowsFile) appendFileSync(windowsFile, `${JSON.stringify({ name, fromUs, toUs: monotonicUs() })}\n`);
}

// Load on core 1, all threads; raise the fd limit of this process (children inherit it).
spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const hard = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim();
spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${hard}:${hard}`], { stdio: 'ignore' });
const soft = Number(spawnSync('prlimit', ['--pid', String(process.pid), '--nofile', '--noheadings', '--output=SOFT'], { encoding: 'utf8' }).stdout.trim());
if (!(soft >= streamCount + 1000)) {
  process.stderr.write(`open-file limit ${soft} is too low for ${streamCount} streams; raise it (ulimit -n ${streamCount + 1000}) and rerun\n`);
  process.exit(2);
}

const here = path.dirname(new URL(import.meta.url).pathname);
const workDir = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-sse-'));
const plan = { streamCount, orgCount, probes, loneProbes, duration, measured };

const servers: RunningServer[] = [];
let failed = false;
try {
  const scenario = { orgCount, daemonsPerOrg, concurrency, workDir, servers };
  const ceiling = await startCeilingSubject(scenario);
  const cpuProf = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values['cpu-prof'])}`] : [];
  const node = await startNodeSubject(scenario, 'troupe rotate stream', path.join(here, '../..'), cpuProf);
  const baseline = values.baseline === undefined ? undefined : await startNodeSubject(scenario, 'baseline rotate stream', path.resolve(values.baseline), []);
  const subjects = baseline === undefined ? [ceiling, node] : [ceiling, node, baseline];

  const results = new Map<string, RoundResult[]>(subjects.map((s) => [s.name, []]));
  const rateRatios: number[] = [];
  const baseRateRatios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const subject of subjects) {
      const r = await measure(subject, plan);
      results.get(subject.name)!.push(r);
      process.stderr.write(roundLine(round, rounds, subject.name, r));
    }
    rateRatios.push(results.get(node.name)!.at(-1)!.eventsPerSecond / results.get(ceiling.name)!.at(-1)!.eventsPerSecond);
    if (baseline !== undefined) baseRateRatios.push(results.get(baseline.name)!.at(-1)!.eventsPerSecond / results.get(ceiling.name)!.at(-1)!.eventsPerSecond);
  }

  console.log(`\n${streamCount} streams in ${orgCount} groups, ${rounds} rounds of ${duration}s publishing, ${probes} latency probes; server core 0, clients core 1`);
  printServers(results);
  failed = !printGoals(results.get(node.name)!, rateRatios, plan);
  if (baseline !== undefined) printBaseline(values.baseline!, results.get(baseline.name)!, baseRateRatios);
} catch (err) {
  failed = true;
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
