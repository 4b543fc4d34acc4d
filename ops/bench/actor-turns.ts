/**
 * The actor runtime's cost per turn on the two hot kinds (session, daemon-host): admission against the kind's message
 * schema, decide, the table's check of the new status, the versioned write and the reply, over an in-memory snapshot
 * store so that nothing but CPU is measured. Session turns are whole lifecycles (dispatch, claimed, running,
 * finalizing, completed); daemon-host turns are register, then enqueue + deliver pairs, as heartbeats with pending
 * mutations do.
 *
 * With `--baseline <dir>` (another checkout of this repository, with its node_modules) each round runs this file in
 * both trees, one after the other, each in a fresh process on core 0, and the table gives this tree's figures over the
 * baseline's: how a change to the runtime or the machines moves the hot paths, measured in one run. Figures are turns
 * per CPU-second of the measuring process, not per wall second (see `cpuSecondsOf`).
 *
 *   npx tsx ops/bench/actor-turns.ts [--baseline <dir>] [--rounds 5] [--sessions 4000] [--hosts 2000] [--in-flight 256]
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createActorSystem } from '../../actors/runtime/system.js';
import { createSessionBehavior } from '../../actors/kinds/session/actor.js';
import { createDaemonHostBehavior } from '../../actors/kinds/daemon-host/actor.js';
import { systemClock } from '../kernel/clock.js';
import { silentLogger } from '../kernel/logger.js';
import type { Snapshot, SnapshotStore } from '../../storage/snapshot-store.js';
import { median, printTable } from './harness.js';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    sessions: { type: 'string', default: '4000' },
    hosts: { type: 'string', default: '2000' },
    'in-flight': { type: 'string', default: '256' },
    child: { type: 'boolean', default: false },
  },
});
const bounded = (value: string | undefined, low: number, high: number) => Math.min(Math.max(Number(value), low), high);
const rounds = bounded(values.rounds, 1, 50);
const sessions = bounded(values.sessions, 100, 1_000_000);
const hosts = bounded(values.hosts, 100, 1_000_000);
const inFlight = bounded(values['in-flight'], 1, 10_000);

interface Figures { readonly sessionTurnsPerCpuSecond: number; readonly hostTurnsPerCpuSecond: number }

/** Versions fenced as in the real store; projections are not run (they need a database transaction). */
class InMemorySnapshots implements SnapshotStore {
  private readonly rows = new Map<string, { version: number; json: string }>();
  async load<S>(address: string): Promise<Snapshot<S> | undefined> {
    const row = this.rows.get(address);
    return row === undefined ? undefined : { address, version: row.version, state: JSON.parse(row.json) as S, updatedAt: new Date() };
  }
  async save<S>(address: string, expectedVersion: number, state: S): Promise<number> {
    const current = this.rows.get(address)?.version ?? 0;
    if (current !== expectedVersion) throw new Error(`stale version at ${address}`);
    this.rows.set(address, { version: current + 1, json: JSON.stringify(state) });
    return current + 1;
  }
  async remove(address: string): Promise<void> {
    this.rows.delete(address);
  }
}

/** Runs `count` jobs with at most `inFlight` of them at once. */
async function pooled(count: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await job(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
}

const ORG = '11111111-1111-4111-8111-111111111111';
const PROJECT = '22222222-2222-4222-8222-222222222222';
const REGISTRATION = '33333333-3333-4333-8333-333333333333';
const hex16 = (prefix: string, i: number) => `${prefix}${i.toString(16).padStart(15, '0')}`;
const uuidFor = (i: number) => `44444444-4444-4444-8444-${i.toString(16).padStart(12, '0')}`;

/**
 * CPU seconds (user + system) this process spent on `work`. On a shared machine wall time swings several-fold with
 * other people's load; the CPU a turn costs does not, and it is what a busier node runs out of.
 */
async function cpuSecondsOf(work: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await work();
  const spent = process.cpuUsage(before);
  return (spent.user + spent.system) / 1e6;
}

async function measure(label: string): Promise<Figures> {
  const system = createActorSystem({
    snapshots: new InMemorySnapshots(), clock: systemClock, log: silentLogger(), passivateAfterMs: 600_000, defaultAskTimeoutMs: 60_000,
  });
  system.register(createSessionBehavior());
  system.register(createDaemonHostBehavior());

  const lifecycle = async (i: number) => {
    const address = `session/${hex16(label, i)}`;
    await system.ask(address, {
      type: 'session.dispatch', orgId: ORG, projectId: PROJECT, trackerSessionId: `bench-${label}-${i}`, prompt: 'Fix the bug',
      agentCardId: null, trackerIssue: null, workType: null, provider: null, requestedBy: 'apiKey:bench',
    });
    for (const status of ['claimed', 'running', 'finalizing', 'completed']) {
      await system.ask(address, { type: 'session.transition', status, workerId: 'w1', costUsd: 0.5, orgId: ORG, projectIds: [PROJECT] });
    }
  };
  const hostWork = async (i: number) => {
    const address = `daemon-host/${label}-${i}`;
    await system.ask(address, { type: 'daemonHost.register', orgId: ORG, registrationId: REGISTRATION, hostname: 'h', maxAgents: 4, projectIds: [PROJECT] });
    for (let m = 0; m < 2; m += 1) {
      await system.ask(address, { type: 'daemonHost.enqueue', mutationId: uuidFor(i * 2 + m), op: 'project.add', params: { projectId: PROJECT }, requestedBy: 'user:bench' });
      await system.ask(address, { type: 'daemonHost.deliver' });
    }
  };

  // Warm-up: JIT, schema compilation, the first incarnations.
  await pooled(Math.min(500, sessions), (i) => lifecycle(sessions + i));
  await pooled(Math.min(500, hosts), (i) => hostWork(hosts + i));

  const sessionSeconds = await cpuSecondsOf(() => pooled(sessions, lifecycle));
  const hostSeconds = await cpuSecondsOf(() => pooled(hosts, hostWork));
  await system.stop();
  return { sessionTurnsPerCpuSecond: (sessions * 5) / sessionSeconds, hostTurnsPerCpuSecond: (hosts * 5) / hostSeconds };
}

if (values.child) {
  process.stdout.write(`${JSON.stringify(await measure('a'))}\n`);
  process.exit(0);
}

/** One measurement in a fresh process on core 0, from the checkout at `root`. */
function runIn(root: string): Figures {
  const script = path.join(root, 'ops/bench/actor-turns.ts');
  const args = ['-c', '0', path.join(root, 'node_modules/.bin/tsx'), script, '--child', '--sessions', String(sessions), '--hosts', String(hosts), '--in-flight', String(inFlight)];
  const child = spawnSync('taskset', args, { cwd: root, encoding: 'utf8', timeout: 600_000 });
  if (child.status !== 0) throw new Error(`benchmark in ${root} failed: ${child.stderr || child.error?.message}`);
  return JSON.parse(child.stdout.trim().split('\n').pop()!) as Figures;
}

const here = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const baseline = values.baseline === undefined ? undefined : path.resolve(values.baseline);
const rows: Array<Record<string, string | number>> = [];
const ratios = { session: [] as number[], host: [] as number[] };
for (let round = 1; round <= rounds; round += 1) {
  const ours = runIn(here);
  rows.push({ round, tree: 'this', 'session turns per CPU-s': Math.round(ours.sessionTurnsPerCpuSecond), 'daemon-host turns per CPU-s': Math.round(ours.hostTurnsPerCpuSecond) });
  if (baseline === undefined) continue;
  const theirs = runIn(baseline);
  rows.push({ round, tree: 'baseline', 'session turns per CPU-s': Math.round(theirs.sessionTurnsPerCpuSecond), 'daemon-host turns per CPU-s': Math.round(theirs.hostTurnsPerCpuSecond) });
  ratios.session.push(ours.sessionTurnsPerCpuSecond / theirs.sessionTurnsPerCpuSecond);
  ratios.host.push(ours.hostTurnsPerCpuSecond / theirs.hostTurnsPerCpuSecond);
}
printTable(rows);
if (baseline !== undefined) {
  console.log(`\nthis ÷ baseline, median of ${rounds} rounds: session ${median(ratios.session).toFixed(3)}, daemon-host ${median(ratios.host).toFixed(3)}`);
}
