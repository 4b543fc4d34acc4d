// Reads a V8 .cpuprofile (from `node --cpu-prof`, e.g. `ops/bench/heartbeat.ts --cpu-prof <dir>`) and prints the
// functions with the most self time and the most total time (self + callees, each function counted once per
// sample, so recursion does not inflate it). `--from-ms`/`--to-ms` keep only the samples in that window, measured
// from the start of the profile, so the steady state can be read without start-up and registration; `--after <text>`
// starts the window after the last sample with a frame whose label contains <text> (e.g. `--after verifyTokenSync`:
// after the last first-sight token verification, i.e. once every daemon registered and heartbeat once).
// `--windows <file> --name <text>` keeps only the samples inside the measured windows a bench wrote to <file> (JSON
// lines `{name, fromUs, toUs}` in CLOCK_MONOTONIC microseconds, the clock of the profile's own timestamps) named
// exactly <text>: e.g. the troupe heartbeat's 10 s windows alone, without its warm-ups or the other targets.
//   npx tsx ops/bench/cpuprofile-top.ts <file.cpuprofile> [--from-ms 0] [--to-ms inf] [--after text] [--top 30]
//     [--windows <dir>/windows.jsonl --name 'troupe heartbeat']
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

interface CallFrame { readonly functionName: string; readonly url: string; readonly lineNumber: number }
interface ProfileNode { readonly id: number; readonly callFrame: CallFrame; readonly children?: readonly number[] }
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'from-ms': { type: 'string', default: '0' },
    'to-ms': { type: 'string', default: 'Infinity' },
    top: { type: 'string', default: '30' },
    after: { type: 'string' },
    windows: { type: 'string' },
    name: { type: 'string', default: '' },
  },
});
const file = positionals[0];
if (file === undefined) throw new Error('usage: cpuprofile-top.ts <file.cpuprofile> [--from-ms N] [--to-ms N] [--top N]');
const fromUs = Number(values['from-ms']) * 1000;
const toUs = Number(values['to-ms']) * 1000;
const top = Number(values.top);

const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
const byId = new Map<number, ProfileNode>(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);

function stackLabels(leafId: number): string[] {
  const labels: string[] = [];
  for (let id: number | undefined = leafId; id !== undefined; id = parentOf.get(id)) labels.push(label(byId.get(id)!.callFrame));
  return labels;
}

// Absolute windows (monotonic µs), from a bench's windows file; none means every sample counts.
const windows = values.windows === undefined ? undefined : readFileSync(values.windows, 'utf8').split('\n').filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as { name: string; fromUs: number; toUs: number })
  .filter((w) => w.name === values.name);
if (windows !== undefined && windows.length === 0) throw new Error(`no window in ${values.windows} is named '${values.name}'`);
const inWindows = (absUs: number): boolean => windows === undefined || windows.some((w) => absUs >= w.fromUs && absUs <= w.toUs);

let startUs = fromUs;
if (values.after !== undefined) {
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (stackLabels(profile.samples[i]!).some((l) => l.includes(values.after!))) startUs = Math.max(startUs, at);
  }
}

function label(frame: CallFrame): string {
  const where = frame.url === '' ? '' : ` ${path.basename(frame.url.replace(/^file:\/\//, ''))}:${frame.lineNumber + 1}`;
  return `${frame.functionName || '(anonymous)'}${where}`;
}

const self = new Map<string, number>();
const total = new Map<string, number>();
let elapsed = 0;
let counted = 0;
let idle = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i] ?? 0;
  elapsed += delta;
  if (elapsed <= startUs || elapsed > toUs || !inWindows(profile.startTime + elapsed)) continue;
  const leaf = byId.get(profile.samples[i]!)!;
  const leafName = leaf.callFrame.functionName;
  if (leafName === '(idle)') {
    idle += delta;
    continue;
  }
  counted += delta;
  const leafLabel = label(leaf.callFrame);
  self.set(leafLabel, (self.get(leafLabel) ?? 0) + delta);
  for (const l of new Set(stackLabels(leaf.id))) total.set(l, (total.get(l) ?? 0) + delta);
}

function print(title: string, m: Map<string, number>): void {
  console.log(`\n${title}`);
  for (const [name, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * us) / Math.max(1, counted)).toFixed(1).padStart(6)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`);
  }
}
console.log(`window ${(startUs / 1000).toFixed(0)}–${Math.min(toUs, elapsed) / 1000} ms of ${(elapsed / 1000).toFixed(0)} ms; busy ${(counted / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms`);
print('self time', self);
print('total time', total);
