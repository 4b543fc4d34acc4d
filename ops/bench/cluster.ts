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
import { spawn, type ChildProcess } from 'node:child_process';
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

interface Worker {
  request<T>(message: unknown, timeoutMs: number): Promise<T>;
  /** CPU seconds (user + system) the process has used so far, from /proc: works for a checkout that cannot say. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** Linux reports a process's CPU time in clock ticks of 1/100 s (USER_HZ, fixed at 100 on every architecture). */
const TICKS_PER_SECOND = 100;

function cpuSecondsOf(pid: number): number {
  // Fields after the command name (which may hold spaces, so split after its closing parenthesis): utime is the
  // 14th field of the line and stime the 15th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Starts `script` pinned to `core` with an IPC channel and waits for its `{ready}`. */
async function startWorker(script: string, args: readonly string[], core: string, nodeArgs: readonly string[] = []): Promise<Worker> {
  const child: ChildProcess = spawn('taskset', ['-c', core, process.execPath, ...nodeArgs, '--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const request = <T>(message: unknown, timeoutMs: number) =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => { cleanup(); reject(new Error(`${path.basename(script)} ${args.join(' ')} did not answer within ${timeoutMs} ms`)); }, timeoutMs);
      const onMessage = (reply: unknown) => { cleanup(); resolve(reply as T); };
      const onExit = (code: number | null) => { cleanup(); reject(new Error(`${path.basename(script)} exited with ${code}`)); };
      const cleanup = () => { clearTimeout(timer); child.off('message', onMessage); child.off('exit', onExit); };
      child.on('message', onMessage);
      child.once('exit', onExit);
      if (message !== undefined) child.send(message as object);
    });
  await request(undefined, 60_000);
  return {
    request,
    cpuSeconds: () => cpuSecondsOf(child.pid!),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.send({ stop: true });
      await exited;
      clearTimeout(kill);
    },
  };
}

async function bench(): Promise<void> {
  const rounds = clamp(values.rounds, 1, 20);
  const seconds = clamp(values.seconds, 1, 60);
  const warmup = clamp(values.warmup, 0, 30);
  const concurrency = clamp(values.concurrency, 1, 5_000);
  const window = clamp(values.window, 1, 10_000);
  const prefix = `troupe-bench-${randomBytes(4).toString('hex')}`;
  const baselinePrefix = `${prefix}-base`;
  const baselineScript = values.baseline === undefined ? undefined : path.join(path.resolve(values.baseline), 'ops', 'bench', 'cluster.ts');
  const ceilingQueue = `${prefix}.ceiling`;
  const self = fileURLToPath(import.meta.url);
  const ceilingScript = path.join(path.dirname(self), 'ceilings', 'amqp-confirmed-publish.ts');
  const floorScript = path.join(path.dirname(self), 'ceilings', 'amqp-inbox-round-trip.ts');
  const floorArgs = ['--url', values.url, '--queue', `${prefix}.floor`];
  const askBytes = encodeEnvelope(createEnvelope({
    type: 'ask', to: `daemon-host/${ADDRESSES - 1}`, from: 'bench-asker', deadline: Date.now() + 10_000, payload: { ...heartbeat, seq: 99_999 },
  })).byteLength;
  const profile = values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof']] : [];
  const common = ['--url', values.url, '--prefix', prefix, '--shards', String(SHARDS)];
  const ceilingArgs = ['--url', values.url, '--queue', ceilingQueue, '--bytes', String(askBytes), '--window', String(window), '--spread', String(SHARDS)];

  const workers: Worker[] = [];
  try {
    const drain = await startWorker(ceilingScript, ['--role', 'drain', ...ceilingArgs], '0');
    workers.push(drain);
    const publisher = await startWorker(ceilingScript, ['--role', 'publisher', ...ceilingArgs], '1');
    workers.push(publisher);
    const holder = await startWorker(self, ['--role', 'holder', ...common], '0', profile);
    workers.push(holder);
    const asker = await startWorker(self, ['--role', 'asker', ...common], '1', profile);
    workers.push(asker);
    const floorAnswerer = await startWorker(floorScript, ['--role', 'answerer', ...floorArgs], '0');
    workers.push(floorAnswerer);
    const floorAsker = await startWorker(floorScript, ['--role', 'asker', ...floorArgs], '1');
    workers.push(floorAsker);
    let baseline: { holder: Worker; asker: Worker } | undefined;
    if (baselineScript !== undefined) {
      const baseCommon = ['--url', values.url, '--prefix', baselinePrefix, '--shards', String(SHARDS)];
      const holder = await startWorker(baselineScript, ['--role', 'holder', ...baseCommon], '0');
      workers.push(holder);
      const asker = await startWorker(baselineScript, ['--role', 'asker', ...baseCommon], '1');
      workers.push(asker);
      baseline = { holder, asker };
    }
    const bound = (s: number) => (s + 60) * 1000;
    const ceilingRun = (run: RunRequest) => publisher.request<LoadResult>({ run }, bound(run.seconds));
    const askRun = (run: RunRequest) => asker.request<LoadResult>({ run }, bound(run.seconds));

    const baselineRun = (run: RunRequest) => baseline!.asker.request<LoadResult>({ run }, bound(run.seconds));
    if (warmup > 0) {
      await ceilingRun({ seconds: warmup });
      await askRun({ seconds: warmup, concurrency });
      if (baseline) await baselineRun({ seconds: warmup, concurrency });
    }
    const abRows: Array<Record<string, string | number>> = [];
    const abRates: number[] = [];
    const abPacedP99s: number[] = [];
    const abCpu: number[] = [];
    /** Runs a closed-loop load and answers it with the CPU nodes A and B spent per answered ask (seconds). */
    const withCpu = async (nodes: readonly Worker[], load: () => Promise<LoadResult>) => {
      const cpuBefore = nodes.reduce((sum, node) => sum + node.cpuSeconds(), 0);
      const began = performance.now();
      const result = await load();
      const answered = result.rate * ((performance.now() - began) / 1000);
      const cpu = nodes.reduce((sum, node) => sum + node.cpuSeconds(), 0) - cpuBefore;
      return { result, cpuPerAsk: cpu / Math.max(1, answered) };
    };
    const rows: Array<Record<string, string | number>> = [];
    const ratios: number[] = [];
    const pacedP99s: number[] = [];
    const ceilings: number[] = [];
    const ceilingPacedP99s: number[] = [];
    const ceilingDeliverP99s: number[] = [];
    const spreadDeliverP99s: number[] = [];
    const floorP99s: number[] = [];
    const paths: number[] = [];
    for (let round = 1; round <= rounds; round += 1) {
      const ceiling = (await ceilingRun({ seconds })).rate;
      const pacedRate = Math.max(1, Math.floor(ceiling * GOAL_RATIO / 2));
      // The baseline goes second in odd rounds and first in even ones, so neither tree always follows the other.
      const baselinePair = async () => {
        const { result: rate, cpuPerAsk } = await withCpu([baseline!.asker, baseline!.holder], () => baselineRun({ seconds, concurrency }));
        return { rate, cpuPerAsk, paced: await baselineRun({ seconds, perSecond: pacedRate }) };
      };
      const before = baseline && round % 2 === 0 ? await baselinePair() : undefined;
      const { result: brokerPath, cpuPerAsk } = await withCpu([asker, holder], () => askRun({ seconds, concurrency }));
      const paced = await askRun({ seconds, perSecond: pacedRate });
      const after = baseline && round % 2 === 1 ? await baselinePair() : undefined;
      const pair = before ?? after;
      if (pair) {
        const { rate: theirs, paced: theirsPaced } = pair;
        abRates.push(brokerPath.rate / theirs.rate);
        abCpu.push(cpuPerAsk / pair.cpuPerAsk);
        abPacedP99s.push(paced.p99 / theirsPaced.p99);
        abRows.push({
          round, 'this asks/s': Math.round(brokerPath.rate), 'baseline asks/s': Math.round(theirs.rate), 'rate ratio': Number((brokerPath.rate / theirs.rate).toFixed(3)),
          'this CPU µs/ask': Math.round(cpuPerAsk * 1e6), 'baseline CPU µs/ask': Math.round(pair.cpuPerAsk * 1e6),
          'CPU ratio': Number((cpuPerAsk / pair.cpuPerAsk).toFixed(3)), 'this paced p99 ms': paced.p99, 'baseline paced p99 ms': theirsPaced.p99, 'p99 ratio': Number((paced.p99 / theirsPaced.p99).toFixed(3)),
          failures: theirs.failures + theirsPaced.failures,
        });
      }
      // The same round trip in plain amqplib at the same rate: the floor the broker and these cores set (decision 0019).
      const floor = await floorAsker.request<LoadResult>({ run: { seconds, perSecond: pacedRate } }, bound(seconds));
      floorP99s.push(floor.p99);
      await drain.request({ collect: true }, 10_000);
      const ceilingPaced = await ceilingRun({ seconds, perSecond: pacedRate });
      const ceilingDelivery = await drain.request<{ p99: number }>({ collect: true }, 10_000);
      ceilingDeliverP99s.push(ceilingDelivery.p99);
      // The same paced publishes spread over as many quorum queues as the broker path has shards.
      await ceilingRun({ seconds, perSecond: pacedRate, spread: true });
      const spreadDelivery = await drain.request<{ p99: number }>({ collect: true }, 10_000);
      spreadDeliverP99s.push(spreadDelivery.p99);
      ceilingPacedP99s.push(ceilingPaced.p99);
      ratios.push(brokerPath.rate / ceiling);
      pacedP99s.push(paced.p99);
      ceilings.push(ceiling);
      paths.push(brokerPath.rate);
      rows.push({
        round, 'ceiling msg/s': Math.round(ceiling), 'A→B asks/s': Math.round(brokerPath.rate), ratio: Number((brokerPath.rate / ceiling).toFixed(2)),
        'p50 ms': brokerPath.p50, 'p99 ms': brokerPath.p99, 'asks/msg': Number((brokerPath.asksPerMessage ?? 1).toFixed(2)), 'paced asks/s': Math.round(paced.rate), 'paced p50 ms': paced.p50,
        'paced p99 ms': paced.p99, 'amqplib inbox p99 ms': Number(floor.p99.toFixed(2)), 'ceiling paced p99 ms': ceilingPaced.p99,
        'ceiling deliver p99 ms': Number(ceilingDelivery.p99.toFixed(2)),
        [`deliver p99 ms, ${SHARDS} queues`]: Number(spreadDelivery.p99.toFixed(2)), failures: brokerPath.failures + paced.failures,
      });
    }
    const local = await askRun({ seconds, concurrency, local: true });
    const ratio = median(ratios);
    const p99 = median(pacedP99s);
    rows.push({
      round: 'median', 'ceiling msg/s': Math.round(median(ceilings)), 'A→B asks/s': Math.round(median(paths)), ratio: Number(ratio.toFixed(2)),
      'p50 ms': '', 'p99 ms': '', 'asks/msg': '', 'paced asks/s': '', 'paced p50 ms': '', 'paced p99 ms': p99,
      'amqplib inbox p99 ms': Number(median(floorP99s).toFixed(2)), 'ceiling paced p99 ms': median(ceilingPacedP99s),
      'ceiling deliver p99 ms': Number(median(ceilingDeliverP99s).toFixed(2)),
      [`deliver p99 ms, ${SHARDS} queues`]: Number(median(spreadDeliverP99s).toFixed(2)), failures: '',
    });
    rows.push({
      round: 'one node in-process', 'ceiling msg/s': '', 'A→B asks/s': Math.round(local.rate), ratio: '', 'p50 ms': local.p50, 'p99 ms': local.p99, 'asks/msg': '',
      'paced asks/s': '', 'paced p50 ms': '', 'paced p99 ms': '', 'amqplib inbox p99 ms': '', 'ceiling paced p99 ms': '', 'ceiling deliver p99 ms': '',
      [`deliver p99 ms, ${SHARDS} queues`]: '', failures: local.failures,
    });
    console.log(`broker scheduler busy-wait: ${brokerBusyWait()}`);
    console.log(`G4 broker path: ${askBytes}-byte asks over ${SHARDS} shards, ${concurrency} in flight vs confirmed publish (quorum, window ${window}); ${rounds} rounds of ${seconds} s; paced at a quarter of each round's ceiling`);
    printTable(rows);
    const met = ratio >= GOAL_RATIO && p99 <= GOAL_P99_MS;
    console.log(`G4: median ratio ${ratio.toFixed(2)} (goal ≥ ${GOAL_RATIO}); median p99 at half the goal rate ${p99.toFixed(2)} ms (goal ≤ ${GOAL_P99_MS} ms) → ${met ? 'met' : 'MISSED'}`);
    if (baseline) {
      console.log(`\nthis tree against the baseline ${values.baseline}, steps 2 and 3 interleaved in each round:`);
      printTable(abRows);
      console.log(`this ÷ baseline, median of ${rounds} rounds: A→B asks/s ${median(abRates).toFixed(3)}, CPU of A and B per ask ${median(abCpu).toFixed(3)} (lower is better), paced p99 ${median(abPacedP99s).toFixed(3)} (lower is better)`);
    }
    process.exitCode = met ? 0 : 1;
  } finally {
    for (const worker of workers.reverse()) await worker.stop();
    const cleanup = await amqp.connect(values.url);
    const channel = await cleanup.createChannel();
    await deleteTopology(channel, shardTopology({ prefix, shardCount: SHARDS, nodeId: 'bench-holder', deliveryLimit: 5 }));
    if (baselineScript !== undefined) await deleteTopology(channel, shardTopology({ prefix: baselinePrefix, shardCount: SHARDS, nodeId: 'bench-holder', deliveryLimit: 5 }));
    await channel.deleteQueue(ceilingQueue);
    for (let i = 0; i < SHARDS; i += 1) await channel.deleteQueue(`${ceilingQueue}.q${i}`);
    await cleanup.close();
  }
}

if (values.role === 'holder' || values.role === 'asker') {
  if (!values.prefix || !process.send) throw new Error('node roles are started by the bench itself');
  await runNode(values.role, values.prefix);
} else {
  await bench();
}
