// Benchmark (issue 20, item 5): 500 subscribers of one interview stream, 1 % of them never reading after the
// stream opens, while a worker posts frames at a steady rate (see slow-readers.ts for what is measured). The node
// runs pinned to core 0, this process (the clients and the publisher) to core 1. Prints the figures and the goals:
// the readers' delay p99 ≤ 250 ms, the node holding ≤ 1 MiB for a stalled connection, each stalled reader dropped
// ≤ 30 s after its backlog started to grow; exits 1 when one is missed.
//   npx tsx ops/bench/sse-slow-readers.ts [--subscribers 500] [--stalled 5] [--rate 20] [--frame-bytes 4096]
//     [--seconds 75] [--warmup 5] [--notsent-lowat <bytes>] [--cpu-prof <dir>] [--trace-gc <file>]
//     [--baseline <worktree> [--rounds 1]]
// `--cpu-prof` profiles the node (read it with ops/bench/cpuprofile-top.ts); `--trace-gc` writes the node's GC trace
// to a file. `--baseline` runs the node of another checkout (a worktree with a node_modules link) and this one
// alternately, `--rounds` times each, and prints both: node CPU per delivered frame is the robust figure on a busy
// machine, the delays are not.
// `--notsent-lowat` runs the whole bench in a network namespace of its own (unshare -n, as root) whose
// net.ipv4.tcp_notsent_lowat is set to that many bytes: what the kernel then holds for a stalled connection, against
// the machine's defaults, without touching the machine's own settings.
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { printTable } from './harness.js';
import { runSlowReaders, type SlowReadersResult } from './slow-readers.js';

const { values } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '500' },
    stalled: { type: 'string', default: '5' },
    rate: { type: 'string', default: '20' },
    'frame-bytes': { type: 'string', default: '4096' },
    seconds: { type: 'string', default: '75' },
    warmup: { type: 'string', default: '5' },
    'notsent-lowat': { type: 'string' },
    'cpu-prof': { type: 'string' },
    'trace-gc': { type: 'string' },
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '1' },
  },
});

if (values['notsent-lowat'] !== undefined && process.env.SLOW_READERS_NETNS !== '1') {
  const lowat = Number(values['notsent-lowat']);
  if (!Number.isInteger(lowat) || lowat < 1) throw new Error('--notsent-lowat must be a positive integer');
  const self = [process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)].map((a) => `'${a}'`).join(' ');
  const run = spawnSync('unshare', ['-n', 'sh', '-c', `ip link set lo up && sysctl -q -w net.ipv4.tcp_notsent_lowat=${lowat} && exec ${self}`], {
    stdio: 'inherit', env: { ...process.env, SLOW_READERS_NETNS: '1' },
  });
  process.exit(run.status ?? 1);
}

spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
const run = (label: string, root: string | undefined): Promise<SlowReadersResult> => {
  const nodeArgs: string[] = [];
  if (values['cpu-prof']) {
    const dir = path.resolve(values['cpu-prof'], label);
    mkdirSync(dir, { recursive: true });
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
  }
  const gcLog = values['trace-gc'] ? path.resolve(`${values['trace-gc']}.${label}`) : undefined;
  if (gcLog) nodeArgs.push('--trace-gc');
  return runSlowReaders({
    subscribers: Number(values.subscribers), stalled: Number(values.stalled), framesPerSecond: Number(values.rate),
    frameBytes: Number(values['frame-bytes']), seconds: Number(values.seconds), warmupSeconds: Number(values.warmup),
    command: ['taskset', '-c', '0'], progress: (line) => process.stderr.write(`${label}: ${line}\n`), nodeArgs, root,
    onNodeLine: gcLog ? (line) => appendFileSync(gcLog, `${(performance.timeOrigin + performance.now()).toFixed(0)} ${line}\n`) : undefined,
  });
};

const summary = (label: string, r: SlowReadersResult) => ({
  run: label, load: `${r.loadAverage.start.map((l) => l.toFixed(1)).join(' ')} → ${r.loadAverage.end.map((l) => l.toFixed(1)).join(' ')}`,
  'p50 ms': r.latency.p50Ms, 'p99 ms': r.latency.p99Ms, 'max ms': r.latency.maxMs,
  'first/last reader p99 ms': `${r.perFrame.firstP99Ms} / ${r.perFrame.lastP99Ms}`,
  'node µs/delivery': Math.round((r.cpu.nodeMs * 1000 / r.latency.count) * 10) / 10,
  'node CPU %': Math.round((r.cpu.nodeMs / r.cpu.wallMs) * 100),
  // Runnable but not running: the share of the window the node's main thread waited for core 0.
  'node run-queue wait %': Math.round((r.cpu.nodeWaitMs / r.cpu.wallMs) * 100),
  'client CPU %': Math.round((r.cpu.clientMs / r.cpu.wallMs) * 100),
  'node loop p99/max ms': `${r.nodeLoopDelay.p99Ms} / ${r.nodeLoopDelay.maxMs}`,
  'node GC ms (n)': Object.entries(r.nodeGc).filter(([, g]) => g.count > 0).map(([k, g]) => `${k} ${g.ms} (${g.count})`).join(', '),
  'client loop p99 ms': r.clientLoopDelayP99Ms,
});

let r!: SlowReadersResult;
if (values.baseline !== undefined) {
  const rows: Array<ReturnType<typeof summary>> = [];
  // Each row is printed as it is measured too, so a later run that fails loses nothing.
  const keep = (row: ReturnType<typeof summary>) => { rows.push(row); console.log(JSON.stringify(row)); };
  for (let round = 1; round <= Number(values.rounds); round++) {
    keep(summary(`baseline ${round}`, await run(`baseline-${round}`, path.resolve(values.baseline))));
    r = await run(`this-${round}`, undefined);
    keep(summary(`this ${round}`, r));
  }
  console.log('');
  printTable(rows);
} else {
  r = await run('this', undefined);
  console.log('');
  printTable([summary('this', r)]);
}

const lowat = spawnSync('sysctl', ['-n', 'net.ipv4.tcp_notsent_lowat'], { encoding: 'utf8' }).stdout.trim();
const wmem = spawnSync('sysctl', ['-n', 'net.ipv4.tcp_wmem'], { encoding: 'utf8' }).stdout.trim().replace(/\s+/g, ' ');
console.log(`\nkernel: net.ipv4.tcp_wmem ${wmem}, net.ipv4.tcp_notsent_lowat ${lowat}${process.env.SLOW_READERS_NETNS === '1' ? ' (a network namespace of its own)' : ''}`);
console.log(`${r.subscribers} subscribers (${r.stalled.length} stalled), ${r.framesPublished} frames of ${r.frameBytes} B posted (${r.publishFailures} refused), ${values.rate}/s`);
printTable(r.stalled.map((s, i) => ({
  stalled: i + 1, 'dropped after s': s.droppedAfterMs === null ? 'never' : s.droppedAfterMs / 1000, reason: s.reason ?? '-',
  'stalled ms': s.stalledMs ?? '-', 'node unsent KiB': s.unsentBytes === null ? '-' : Math.round(s.unsentBytes / 1024),
  'kernel send KiB': Math.round(s.kernelSendQueueBytes / 1024), 'client recv KiB': Math.round(s.kernelReceiveQueueBytes / 1024),
  'offered KiB': Math.round(s.bytesOffered / 1024),
})));
console.log(`readers: ${r.readers}, deliveries ${r.latency.count}, delay p50 ${r.latency.p50Ms} ms p99 ${r.latency.p99Ms} ms max ${r.latency.maxMs} ms, frames missed ${r.framesMissed}, readers closed ${r.readersClosed}; this process's event-loop delay p99 ${r.clientLoopDelayP99Ms} ms`);
console.log(`node RSS: ${Math.round(r.rssKb.start / 1024)} MB warm, ${Math.round(r.rssKb.max / 1024)} MB max, ${Math.round(r.rssKb.end / 1024)} MB end; live heap+external after GC ${Math.round(r.liveKb.start / 1024)} → ${Math.round(r.liveKb.end / 1024)} MB (external counts the embedded engine's Wasm memory)`);

// "Exceeding" the bound: the node holds a stalled reader's frames once the kernel's buffers are full; from then it is
// dropped when they pass 256 KiB or when it has taken nothing for the stall timeout, whichever comes first.
const worstDrop = Math.max(...r.stalled.map((s) => (s.stalledMs === null ? Infinity : s.stalledMs)));
const heldWithKernel = Math.max(...r.stalled.map((s) => Math.round(((s.unsentBytes ?? 0) + s.kernelSendQueueBytes) / 1024)));
const goals = [
  { goal: 'readers\' delay p99, ms', value: r.latency.p99Ms, ok: r.latency.p99Ms <= 250, want: '<= 250' },
  { goal: 'frames missed by readers', value: r.framesMissed + r.readersClosed, ok: r.framesMissed + r.readersClosed === 0, want: '0' },
  { goal: 'node-held bytes of a stalled stream, KiB', value: Math.max(...r.stalled.map((s) => Math.round((s.unsentBytes ?? 0) / 1024))), ok: r.stalled.every((s) => (s.unsentBytes ?? 0) <= 1024 * 1024), want: '<= 1024' },
  // The kernel's share is the operating system's (see the header): reported beside the node's, against the same bound.
  // The client's receive queue is the client's memory, not the server's.
  { goal: 'node + its kernel send queue for a stalled connection, KiB', value: heldWithKernel, ok: heldWithKernel <= 1024, want: '<= 1024' },
  { goal: 'stalled readers dropped', value: r.stalled.filter((s) => s.droppedAfterMs !== null).length, ok: r.stalled.every((s) => s.droppedAfterMs !== null), want: String(r.stalled.length) },
  { goal: 'longest stall before the drop, s', value: worstDrop / 1000, ok: worstDrop <= 30_000, want: '<= 30' },
];
console.log('');
printTable(goals.map((g) => ({ goal: g.goal, value: g.value, wanted: g.want, met: g.ok ? 'yes' : 'NO' })));
process.exit(goals.every((g) => g.ok) ? 0 : 1);
