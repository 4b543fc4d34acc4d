// Benchmark (issue 34 §5): the worker's part of "dispatch → agent started" on a repository of 10,000 files and 1,000
// commits with a warm mirror: `prepareWorkspace` (fetch, ref resolved, the session's worktree on its branch), timed
// for each of 50 sessions. Goal: p50 ≤ 150 ms, p99 ≤ 400 ms.
//
//   npx tsx ops/bench/workspace-start.ts [--sessions 50] [--files 10000] [--commits 1000] [--advance-every 5]
//
// Two series: `warm` as a worker meets sessions that arrive one at a time (the repository's spare tree, made after
// the previous start, is ready: decision 0074), and `no spare`, every start checking out its 10,000 files itself
// (what a burst of starts beyond the spare costs). Every `--advance-every` sessions a teammate's commit of 10 files
// lands on origin's main, so starts also fetch and check out a moved tip. Each session is finished and swept outside
// the timed part (a disk full of 100 trees would time the disk, not the start). Exits 1 when the warm series misses
// the goal.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { finishWorkspace, prepareWorkspace, sweepWorkspaces, workspacesSettled } from '../cli/worker/workspace/index.js';
import { advanceMain, makeOrigin } from './git-origin.js';
import { printTable } from './harness.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '50' },
    files: { type: 'string', default: '10000' },
    commits: { type: 'string', default: '1000' },
    'advance-every': { type: 'string', default: '5' },
  },
});
const sessions = Number(values.sessions);
const fileCount = Number(values.files);
const commitCount = Number(values.commits);
const advanceEvery = Number(values['advance-every']);
const GOAL = { p50: 150, p99: 400 };

const root = mkdtempSync(path.join(os.tmpdir(), 'troupe-bench-workspace-'));
const originDir = path.join(root, 'origin.git');

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function series(name: string, spare: boolean): Promise<Record<string, string | number>> {
  const stateDir = path.join(root, name, 'state');
  const workDir = path.join(root, name, 'work');
  const repository = { id: `bench-${name.replace(/\W/g, '')}`, url: pathToFileURL(originDir).href, defaultBranch: 'main' };
  const start = (sessionId: string) => prepareWorkspace({ stateDir, workDir, sessionId, repository, followUp: false, spare, allowFileRepositories: true });
  // The mirror's first clone is not what is measured: a worker has it from its first session of the repository.
  await finishWorkspace(await start(randomBytes(8).toString('hex')), { stateDir });
  const times: number[] = [];
  for (let n = 0; n < sessions; n++) {
    if (advanceEvery > 0 && n > 0 && n % advanceEvery === 0) await advanceMain(originDir, fileCount, n);
    await workspacesSettled();
    const began = performance.now();
    const prepared = await start(randomBytes(8).toString('hex'));
    times.push(performance.now() - began);
    await finishWorkspace(prepared, { stateDir });
    await sweepWorkspaces({ stateDir, workDir, keepHours: 0 });
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { series: name, sessions, 'p50 ms': percentile(sorted, 50), 'p99 ms': percentile(sorted, 99), 'max ms': sorted[sorted.length - 1]! };
}

try {
  const began = performance.now();
  await makeOrigin(originDir, fileCount, commitCount);
  console.log(`origin: ${fileCount} files, ${commitCount} commits, made in ${Math.round(performance.now() - began)} ms; load average ${os.loadavg()[0]!.toFixed(1)}`);
  const rows = [await series('warm', true), await series('no spare', false)];
  printTable(rows);
  console.log(`load average at the end: ${os.loadavg()[0]!.toFixed(1)} (${os.cpus().length} cores)`);
  const warm = rows[0]!;
  const met = (warm['p50 ms'] as number) <= GOAL.p50 && (warm['p99 ms'] as number) <= GOAL.p99;
  console.log(`goal (warm): p50 ≤ ${GOAL.p50} ms, p99 ≤ ${GOAL.p99} ms: ${met ? 'met' : 'NOT MET'}`);
  process.exitCode = met ? 0 : 1;
} finally {
  await workspacesSettled();
  rmSync(root, { recursive: true, force: true });
}
