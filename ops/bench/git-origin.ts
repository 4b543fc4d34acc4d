// The repository the worker benches start sessions on (issue 34 §5): a bare origin of `fileCount` files and
// `commitCount` commits, made with `git fast-import` (seconds, where a commit at a time would take minutes), and a
// teammate's commit landing on its main now and then.
import { spawn } from 'node:child_process';
import path from 'node:path';

// fast-import takes the committer's time as given: counting up keeps every commit's time distinct and in order.
let nextTimestamp = 1_700_000_000;

export function gitIn(cwd: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'inherit'] });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`git ${args[0]} exited ${code}`))));
    if (input !== undefined) child.stdin!.end(input);
  });
}

/**
 * A fast-import commit on main. Within one stream a commit continues main's tip by itself; `resume` makes a new
 * stream start from main as the repository already has it.
 */
export function commit(message: string, changes: ReadonlyArray<readonly [string, string]>, resume: boolean): string {
  const body = changes.map(([file, text]) => `M 644 inline ${file}\ndata ${Buffer.byteLength(text)}\n${text}\n`).join('');
  return `commit refs/heads/main\ncommitter Bench <bench@example.com> ${nextTimestamp++} +0000\ndata ${Buffer.byteLength(message)}\n${message}\n`
    + `${resume ? 'from refs/heads/main^0\n' : ''}${body}\n`;
}

export const fileName = (n: number): string => `src/module-${Math.floor(n / 100)}/file-${n}.ts`;

/** The origin at `originDir`: a first commit of every file, then one file changed per commit up to `commitCount`. */
export async function makeOrigin(originDir: string, fileCount: number, commitCount: number): Promise<void> {
  await gitIn(path.dirname(originDir), ['init', '-q', '--bare', '-b', 'main', originDir]);
  const parts = [commit('Initial import', Array.from({ length: fileCount }, (_, n) => [fileName(n), `export const value${n} = ${n};\n`] as const), false)];
  for (let c = 1; c < commitCount; c++) parts.push(commit(`Change ${c}`, [[fileName((c * 7919) % fileCount), `export const value = ${c};\n`]], false));
  await gitIn(originDir, ['fast-import', '--quiet'], parts.join(''));
}

/** A teammate's commit of 10 files on main, among the origin's first `fileCount` files. */
export async function advanceMain(originDir: string, fileCount: number, round: number): Promise<void> {
  const changes = Array.from({ length: 10 }, (_, k) => [fileName((round * 131 + k * 977) % fileCount), `export const round = ${round};\n`] as const);
  await gitIn(originDir, ['fast-import', '--quiet'], commit(`Teammate round ${round}`, changes, true));
}
