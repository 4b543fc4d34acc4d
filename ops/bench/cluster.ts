/**
 * G4 (shared/PERFORMANCE.md): the broker path between nodes against the confirmed-publish ceiling on the same broker.
 *
 * Six processes, each side of the broker on its own core (PERFORMANCE.md "Method"): node B (`--role holder`, holds
 * every shard) and the ceiling's drain consumer on core 0; node A (`--role asker`, holds no shard) and the ceiling's
 * publisher (ceilings/amqp-confirmed-publish.ts) on core 1. Same broker, same queue type (quorum, durable,
 * persistent messages), same body size (the ceiling publishes bodies as long as A's encoded ask envelope).
 * After a warm-up, `--rounds` interleaved rounds of `--seconds` each:
 *   1. ceiling: confirmed publishes with `--window` in flight on one connection, drained with manual acks;
 *   2. broker path: A asks B heartbeat-sized messages with `--concurrency` asks in flight (one connection each);
 *   3. paced: A asks B at a quarter of that round's ceiling (half the rate the goal asks for) for the e2e p99, and
 *      the same round trip in plain amqplib at that rate (ceilings/amqp-inbox-round-trip.ts, a pair of processes
 *      on the same cores): the floor this broker and these cores set for routed asks (decision 0019);
 *   4. the ceiling publisher paced at that same rate: its publish → confirm p99, and the drain's publish → delivery
 *      p99 (monotonic timestamps in a header), are what the broker alone costs there, the floor under an ask's
 *      round trip (which adds B's work and the reply's trip back).
 * G4 holds when the median of the per-round ratios (2)/(1) is ≥ 0.50 and the median paced p99 is ≤ 5 ms. Then one
 * node in-process (LocalTransport, in A's process) for the rate a single node reaches without the broker.
 * Prints one table; exits 1 when G4 is missed. Every process it starts, it stops; its topology is deleted.
 *
 * `--baseline <checkout>` (another worktree of this repository, with node_modules) also starts a node A and B from
 * that checkout's copy of this file, on the same cores with a topology of their own, and runs steps 2 and 3 on them
 * next to this tree's in every round (after it in odd rounds, before it in even ones): how a change to the transport moves the broker path, measured in one run
 * (this ÷ baseline, median of the per-round ratios).
 *
 *   npx tsx ops/bench/cluster.ts [--url amqp://guest:guest@127.0.0.1:5672] [--rounds 5] [--seconds 3] [--warmup 3]
 *     [--concurrency 256] [--window 1000] [--shards 16] [--baseline <dir>] [--cpu-prof <dir>]
 *     (--cpu-prof profiles nodes A and B)
 */
import { readFileSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { parseArgs } from 'node:util';
import amqp from 'amqplib';
import { Registry } from 'prom-client';
import { AmqpTransport } from '../../transport/amqp/transport.js';
import { deleteTopology, shardTopology } from '../../transport/amqp/topology.js';
import { LocalTransport } from '../../transport/local.js';
import { createEnvelope, encodeEnvelope } from '../../transport/envelope.js';
import type { Transport } from '../../transport/port.js';
import { silentLogger } from '../kernel/logger.js';
import { median, printTable } from './harness.js';
import { startWorker, type Worker } from './cluster-worker.js';

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'bench' },
    url: { type: 'string', default: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672' },
    prefix: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '256' },
    window: { type: 'string', default: '1000' },
    shards: { type: 'string', default: '16' },
    baseline: { type: 'string' },
    'cpu-prof': { type: 'string' },
  },
});
const clamp = (value: string | undefined, min: number, max: number) => Math.min(Math.max(Number(value), min), max);
const SHARDS = clamp(values.shards, 1, 1024);
const ADDRESSES = 500;
const GOAL_RATIO = 0.5;
const GOAL_P99_MS = 5;
const heartbeat = { type: 'heartbeat', daemonId: 'd'.repeat(36), seq: 0, load: { cpu: 0.42, mem: 0.61 }, sessions: ['s'.repeat(36)], at: new Date().toISOString() };
const handler = async (address: string, message: unknown) => ({ address, ok: true, seq: (message as { seq: number }).seq });

interface LoadResult { readonly rate: number; readonly p50: number; readonly p99: number; readonly failures: number; readonly asksPerMessage?: number }
interface RunRequest { readonly seconds: number; readonly concurrency?: number; readonly perSecond?: number; readonly local?: boolean; readonly spread?: boolean }

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Asks with `concurrency` in flight, or paced at `perSecond` (sent on a 1 ms tick, as many as are due). */
/** `messagesSent` reads the transport's count of broker messages that carried asks (batching factor). */
async function askLoad(transport: Transport, run: RunRequest, messagesSent?: () => Promise<number>): Promise<LoadResult> {
  const messagesBefore = await messagesSent?.();
  // Latencies in a typed array and no promise kept per ask: the load generator's own garbage would otherwise show
  // in the tail it measures.
  let latencies = new Float64Array(1 << 16);
  let answered = 0;
  let failures = 0;
  let n = 0;
  let outstanding = 0;
  let drained: (() => void) | undefined;
  const began = performance.now();
  const endAt = began + run.seconds * 1000;
  const one = async () => {
    const i = n++;
    const startedAt = performance.now();
    outstanding += 1;
    try {
      await transport.ask(`daemon-host/${i % ADDRESSES}`, { ...heartbeat, seq: i }, { timeoutMs: 10_000 });
      if (answered === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[answered++] = performance.now() - startedAt;
    } catch {
      failures += 1;
    }
    if (--outstanding === 0) drained?.();
  };
  if (run.perSecond === undefined) {
    await Promise.all(Array.from({ length: run.concurrency ?? 1 }, async () => { while (performance.now() < endAt) await one(); }));
  } else {
    let sent = 0;
    while (performance.now() < endAt) {
      const due = Math.floor(((performance.now() - began) / 1000) * run.perSecond);
      while (sent < due) { sent += 1; void one(); }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    if (outstanding > 0) await new Promise<void>((resolve) => (drained = resolve));
  }
  const elapsed = (performance.now() - began) / 1000;
  const sorted = latencies.subarray(0, answered).sort();
  const messages = messagesSent && messagesBefore !== undefined ? (await messagesSent()) - messagesBefore : undefined;
  return {
    rate: answered / elapsed, p50: percentile(sorted, 50), p99: percentile(sorted, 99), failures,
    ...(messages ? { asksPerMessage: (answered + failures) / messages } : {}),
  };
}

/** Whether a local RabbitMQ runs with scheduler busy-waiting off (rabbitmq-env.conf), read from its command line. */
function brokerBusyWait(): string {
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    let command: string;
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    } catch {
      continue;
    }
    if (!command.includes('beam') || !command.includes('rabbit')) continue;
    return /[-+]sbwt none/.test(command) ? 'off (rabbitmq-env.conf)' : 'on (Erlang default; see rabbitmq-env.conf)';
  }
  return 'unknown (no local broker process)';
}

/** A node process: B holds every shard and answers; A holds none and runs the loads it is sent over IPC. */
async function runNode(role: 'holder' | 'asker', prefix: string): Promise<void> {
  const registry = new Registry();
  const messagesSent = async () => (await registry.getSingleMetric('troupe_transport_ask_messages_total')!.get()).values[0]?.value ?? 0;
  const transport = new AmqpTransport({
    url: values.url, nodeId: `bench-${role}`, shardCount: SHARDS, prefix, log: silentLogger(), metrics: registry,
    ...(role === 'asker' ? { ownedShards: [] } : {}),
  });
  await transport.start(role === 'holder' ? handler : async () => { throw new Error('node A holds no shard'); });
  process.on('message', (m: { run?: RunRequest; stop?: true }) => {
    if (m.stop) {
      void transport.close().finally(() => process.exit(0));
    } else if (m.run?.local) {
      const local = new LocalTransport({ nodeId: 'bench-local', log: silentLogger() });
      void local.start(handler).then(() => askLoad(local, m.run!)).then(async (result) => { await local.close(); process.send!(result); });
    } else if (m.run) {
      void askLoad(transport, m.run, messagesSent).then((result) => process.send!(result));
    }
  });
  process.send!({ ready: true });
}

/** What one run of the bench measures and where: read from the flags once. */
function benchPlan() {
  const prefix = `troupe-bench-${randomBytes(4).toString('hex')}`;
  const self = fileURLToPath(import.meta.url);
  const ceilingQueue = `${prefix}.ceiling`;
  const window = clamp(values.window, 1, 10_000);
  const askBytes = encodeEnvelope(createEnvelope({
    type: 'ask', to: `daemon-host/${ADDRESSES - 1}`, from: 'bench-asker', deadline: Date.now() + 10_000, payload: { ...heartbeat, seq: 99_999 },
  })).byteLength;
  return {
    rounds: clamp(values.rounds, 1, 20),
    seconds: clamp(values.seconds, 1, 60),
    warmup: clamp(values.warmup, 0, 30),
    concurrency: clamp(values.concurrency, 1, 5_000),
    window,
    prefix,
    baselinePrefix: `${prefix}-base`,
    baselineScript: values.baseline === undefined ? undefined : path.join(path.resolve(values.baseline), 'ops', 'bench', 'cluster.ts'),
    ceilingQueue,
    self,
    ceilingScript: path.join(path.dirname(self), 'ceilings', 'amqp-confirmed-publish.ts'),
    floorScript: path.join(path.dirname(self), 'ceilings', 'amqp-inbox-round-trip.ts'),
    floorArgs: ['--url', values.url, '--queue', `${prefix}.floor`],
    askBytes,
    profile: values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof']] : [],
    common: ['--url', values.url, '--prefix', prefix, '--shards', String(SHARDS)],
    ceilingArgs: ['--url', values.url, '--queue', ceilingQueue, '--bytes', String(askBytes), '--window', String(window), '--spread', String(SHARDS)],
  };
}

type BenchPlan = ReturnType<typeof benchPlan>;

/** The processes of one run, and the loads each is sent. */
interface BenchWorkers {
  readonly drain: Worker;
  readonly holder: Worker;
  readonly asker: Worker;
  readonly floorAsker: Worker;
  readonly baseline: { holder: Worker; asker: Worker } | undefined;
  ceilingRun(run: RunRequest): Promise<LoadResult>;
  askRun(run: RunRequest): Promise<LoadResult>;
  baselineRun(run: RunRequest): Promise<LoadResult>;
}

/** Bounded time for a load of `s` seconds to answer. */
const bound = (s: number) => (s + 60) * 1000;

/** Starts every process the plan needs, adding each to `workers` as it starts so the caller stops them whatever happens. */
async function startWorkers(plan: BenchPlan, workers: Worker[]): Promise<BenchWorkers> {
  const started = async (...args: Parameters<typeof startWorker>) => {
    const worker = await startWorker(...args);
    workers.push(worker);
    return worker;
  };
  const drain = await started(plan.ceilingScript, ['--role', 'drain', ...plan.ceilingArgs], '0');
  const publisher = await started(plan.ceilingScript, ['--role', 'publisher', ...plan.ceilingArgs], '1');
  const holder = await started(plan.self, ['--role', 'holder', ...plan.common], '0', plan.profile);
  const asker = await started(plan.self, ['--role', 'asker', ...plan.common], '1', plan.profile);
  await started(plan.floorScript, ['--role', 'answerer', ...plan.floorArgs], '0');
  const floorAsker = await started(plan.floorScript, ['--role', 'asker', ...plan.floorArgs], '1');
  let baseline: { holder: Worker; asker: Worker } | undefined;
  if (plan.baselineScript !== undefined) {
    const baseCommon = ['--url', values.url, '--prefix', plan.baselinePrefix, '--shards', String(SHARDS)];
    const baseHolder = await started(plan.baselineScript, ['--role', 'holder', ...baseCommon], '0');
    const baseAsker = await started(plan.baselineScript, ['--role', 'asker', ...baseCommon], '1');
    baseline = { holder: baseHolder, asker: baseAsker };
  }
  return {
    drain, holder, asker, floorAsker, baseline,
    ceilingRun: (run) => publisher.request<LoadResult>({ run }, bound(run.seconds)),
    askRun: (run) => asker.request<LoadResult>({ run }, bound(run.seconds)),
    baselineRun: (run) => baseline!.asker.request<LoadResult>({ run }, bound(run.seconds)),
  };
}

/** Runs a closed-loop load and answers it with the CPU nodes A and B spent per answered ask (seconds). */
async function withCpu(nodes: readonly Worker[], load: () => Promise<LoadResult>) {
  const cpuBefore = nodes.reduce((sum, node) => sum + node.cpuSeconds(), 0);
  const began = performance.now();
  const result = await load();
  const answered = result.rate * ((performance.now() - began) / 1000);
  const cpu = nodes.reduce((sum, node) => sum + node.cpuSeconds(), 0) - cpuBefore;
  return { result, cpuPerAsk: cpu / Math.max(1, answered) };
}

/** The figures of every round: this tree's against the ceiling, and (with --baseline) against the baseline's. */
function newTally() {
  return {
    rows: [] as Array<Record<string, string | number>>,
    ratios: [] as number[],
    pacedP99s: [] as number[],
    ceilings: [] as number[],
    ceilingPacedP99s: [] as number[],
    ceilingDeliverP99s: [] as number[],
    spreadDeliverP99s: [] as number[],
    floorP99s: [] as number[],
    paths: [] as number[],
    abRows: [] as Array<Record<string, string | number>>,
    abRates: [] as number[],
    abPacedP99s: [] as number[],
    abCpu: [] as number[],
  };
}

type Tally = ReturnType<typeof newTally>;

/** Steps 1 to 4 of one round (see the header), added to `tally`. */
async function runRound(round: number, plan: BenchPlan, w: BenchWorkers, tally: Tally): Promise<void> {
  const { seconds, concurrency } = plan;
  const ceiling = (await w.ceilingRun({ seconds })).rate;
  const pacedRate = Math.max(1, Math.floor(ceiling * GOAL_RATIO / 2));
  // The baseline goes second in odd rounds and first in even ones, so neither tree always follows the other.
  const baselinePair = async () => {
    const { result: rate, cpuPerAsk } = await withCpu([w.baseline!.asker, w.baseline!.holder], () => w.baselineRun({ seconds, concurrency }));
    return { rate, cpuPerAsk, paced: await w.baselineRun({ seconds, perSecond: pacedRate }) };
  };
  const before = w.baseline && round % 2 === 0 ? await baselinePair() : undefined;
  const { result: brokerPath, cpuPerAsk } = await withCpu([w.asker, w.holder], () => w.askRun({ seconds, concurrency }));
  const paced = await w.askRun({ seconds, perSecond: pacedRate });
  const after = w.baseline && round % 2 === 1 ? await baselinePair() : undefined;
  const pair = before ?? after;
  if (pair) {
    const { rate: theirs, paced: theirsPaced } = pair;
    tally.abRates.push(brokerPath.rate / theirs.rate);
    tally.abCpu.push(cpuPerAsk / pair.cpuPerAsk);
    tally.abPacedP99s.push(paced.p99 / theirsPaced.p99);
    tally.abRows.push({
      round, 'this asks/s': Math.round(brokerPath.rate), 'baseline asks/s': Math.round(theirs.rate), 'rate ratio': Number((brokerPath.rate / theirs.rate).toFixed(3)),
      'this CPU µs/ask': Math.round(cpuPerAsk * 1e6), 'baseline CPU µs/ask': Math.round(pair.cpuPerAsk * 1e6),
      'CPU ratio': Number((cpuPerAsk / pair.cpuPerAsk).toFixed(3)), 'this paced p99 ms': paced.p99, 'baseline paced p99 ms': theirsPaced.p99, 'p99 ratio': Number((paced.p99 / theirsPaced.p99).toFixed(3)),
      failures: theirs.failures + theirsPaced.failures,
    });
  }
  // The same round trip in plain amqplib at the same rate: the floor the broker and these cores set (decision 0019).
  const floor = await w.floorAsker.request<LoadResult>({ run: { seconds, perSecond: pacedRate } }, bound(seconds));
  tally.floorP99s.push(floor.p99);
  await w.drain.request({ collect: true }, 10_000);
  const ceilingPaced = await w.ceilingRun({ seconds, perSecond: pacedRate });
  const ceilingDelivery = await w.drain.request<{ p99: number }>({ collect: true }, 10_000);
  tally.ceilingDeliverP99s.push(ceilingDelivery.p99);
  // The same paced publishes spread over as many quorum queues as the broker path has shards.
  await w.ceilingRun({ seconds, perSecond: pacedRate, spread: true });
  const spreadDelivery = await w.drain.request<{ p99: number }>({ collect: true }, 10_000);
  tally.spreadDeliverP99s.push(spreadDelivery.p99);
  tally.ceilingPacedP99s.push(ceilingPaced.p99);
  tally.ratios.push(brokerPath.rate / ceiling);
  tally.pacedP99s.push(paced.p99);
  tally.ceilings.push(ceiling);
  tally.paths.push(brokerPath.rate);
  tally.rows.push({
    round, 'ceiling msg/s': Math.round(ceiling), 'A→B asks/s': Math.round(brokerPath.rate), ratio: Number((brokerPath.rate / ceiling).toFixed(2)),
    'p50 ms': brokerPath.p50, 'p99 ms': brokerPath.p99, 'asks/msg': Number((brokerPath.asksPerMessage ?? 1).toFixed(2)), 'paced asks/s': Math.round(paced.rate), 'paced p50 ms': paced.p50,
    'paced p99 ms': paced.p99, 'amqplib inbox p99 ms': Number(floor.p99.toFixed(2)), 'ceiling paced p99 ms': ceilingPaced.p99,
    'ceiling deliver p99 ms': Number(ceilingDelivery.p99.toFixed(2)),
    [`deliver p99 ms, ${SHARDS} queues`]: Number(spreadDelivery.p99.toFixed(2)), failures: brokerPath.failures + paced.failures,
  });
}

/** Prints the rounds, their medians, the in-process rate and G4 (and the baseline comparison); answers whether G4 is met. */
function report(plan: BenchPlan, tally: Tally, local: LoadResult, withBaseline: boolean): boolean {
  const { rows } = tally;
  const ratio = median(tally.ratios);
  const p99 = median(tally.pacedP99s);
  rows.push({
    round: 'median', 'ceiling msg/s': Math.round(median(tally.ceilings)), 'A→B asks/s': Math.round(median(tally.paths)), ratio: Number(ratio.toFixed(2)),
    'p50 ms': '', 'p99 ms': '', 'asks/msg': '', 'paced asks/s': '', 'paced p50 ms': '', 'paced p99 ms': p99,
    'amqplib inbox p99 ms': Number(median(tally.floorP99s).toFixed(2)), 'ceiling paced p99 ms': median(tally.ceilingPacedP99s),
    'ceiling deliver p99 ms': Number(median(tally.ceilingDeliverP99s).toFixed(2)),
    [`deliver p99 ms, ${SHARDS} queues`]: Number(median(tally.spreadDeliverP99s).toFixed(2)), failures: '',
  });
  rows.push({
    round: 'one node in-process', 'ceiling msg/s': '', 'A→B asks/s': Math.round(local.rate), ratio: '', 'p50 ms': local.p50, 'p99 ms': local.p99, 'asks/msg': '',
    'paced asks/s': '', 'paced p50 ms': '', 'paced p99 ms': '', 'amqplib inbox p99 ms': '', 'ceiling paced p99 ms': '', 'ceiling deliver p99 ms': '',
    [`deliver p99 ms, ${SHARDS} queues`]: '', failures: local.failures,
  });
  console.log(`broker scheduler busy-wait: ${brokerBusyWait()}`);
  console.log(`G4 broker path: ${plan.askBytes}-byte asks over ${SHARDS} shards, ${plan.concurrency} in flight vs confirmed publish (quorum, window ${plan.window}); ${plan.rounds} rounds of ${plan.seconds} s; paced at a quarter of each round's ceiling`);
  printTable(rows);
  const met = ratio >= GOAL_RATIO && p99 <= GOAL_P99_MS;
  console.log(`G4: median ratio ${ratio.toFixed(2)} (goal ≥ ${GOAL_RATIO}); median p99 at half the goal rate ${p99.toFixed(2)} ms (goal ≤ ${GOAL_P99_MS} ms) → ${met ? 'met' : 'MISSED'}`);
  if (withBaseline) {
    console.log(`\nthis tree against the baseline ${values.baseline}, steps 2 and 3 interleaved in each round:`);
    printTable(tally.abRows);
    console.log(`this ÷ baseline, median of ${plan.rounds} rounds: A→B asks/s ${median(tally.abRates).toFixed(3)}, CPU of A and B per ask ${median(tally.abCpu).toFixed(3)} (lower is better), paced p99 ${median(tally.abPacedP99s).toFixed(3)} (lower is better)`);
  }
  return met;
}

/** Deletes every queue and exchange the run declared, the baseline's included. */
async function deleteBenchTopology(plan: BenchPlan): Promise<void> {
  const cleanup = await amqp.connect(values.url);
  const channel = await cleanup.createChannel();
  await deleteTopology(channel, shardTopology({ prefix: plan.prefix, shardCount: SHARDS, nodeId: 'bench-holder', deliveryLimit: 5 }));
  if (plan.baselineScript !== undefined) await deleteTopology(channel, shardTopology({ prefix: plan.baselinePrefix, shardCount: SHARDS, nodeId: 'bench-holder', deliveryLimit: 5 }));
  await channel.deleteQueue(plan.ceilingQueue);
  for (let i = 0; i < SHARDS; i += 1) await channel.deleteQueue(`${plan.ceilingQueue}.q${i}`);
  await cleanup.close();
}

async function bench(): Promise<void> {
  const plan = benchPlan();
  const workers: Worker[] = [];
  try {
    const w = await startWorkers(plan, workers);
    if (plan.warmup > 0) {
      await w.ceilingRun({ seconds: plan.warmup });
      await w.askRun({ seconds: plan.warmup, concurrency: plan.concurrency });
      if (w.baseline) await w.baselineRun({ seconds: plan.warmup, concurrency: plan.concurrency });
    }
    const tally = newTally();
    for (let round = 1; round <= plan.rounds; round += 1) await runRound(round, plan, w, tally);
    const local = await w.askRun({ seconds: plan.seconds, concurrency: plan.concurrency, local: true });
    process.exitCode = report(plan, tally, local, w.baseline !== undefined) ? 0 : 1;
  } finally {
    for (const worker of workers.reverse()) await worker.stop();
    await deleteBenchTopology(plan);
  }
}

if (values.role === 'holder' || values.role === 'asker') {
  if (!values.prefix || !process.send) throw new Error('node roles are started by the bench itself');
  await runNode(values.role, values.prefix);
} else {
  await bench();
}
