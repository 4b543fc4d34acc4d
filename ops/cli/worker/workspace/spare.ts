import { mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { addWorktree } from './add.js';
import { gitMaybe } from './git.js';
import { removeWorktree } from './remove.js';


/**
 * One spare worktree per mirror, checked out ahead of need at the commit the last session started from. Writing a
 * tree's files is most of a session's start (10,000 files take ~300 ms on a plain disk, as long as `cp -r` of the
 * same tree); a start that finds a spare renames it (`git worktree move`) and checks out its branch, which only
 * writes the files that differ (decision 0074). A spare lives in the work dir as `.spare-<hex>` (never a session id),
 * is made in the background after a start used or missed one, and is disposable: a failure to make or take one only
 * means the next start writes its tree itself.
 */
export interface Spare {
  readonly dir: string;
  readonly commit: string;
  readonly readyAt: number;
}

export const spareNamePattern = /^\.spare-[0-9a-f]{16}$/;
/**
 * git trusts a file's stat data only when the file is older than the index (else it must read the file: "racily
 * clean"); the index is written again once the tree's files are more than a second old, so a start that takes the
 * spare does not read 10,000 files to learn that nothing changed.
 */
const RACY_WINDOW_MS = 1100;

const ready = new Map<string, Spare>();
const filling = new Map<string, { readonly dir: string; readonly done: Promise<void> }>();

export function takeSpare(mirrorDir: string): Spare | undefined {
  const spare = ready.get(mirrorDir);
  ready.delete(mirrorDir);
  return spare;
}

/** Starts making a spare of `mirrorDir` at `commit` unless one is ready or being made. */
export function refillSpare(mirrorDir: string, workDir: string, commit: string, timeoutMs: number): void {
  if (ready.has(mirrorDir) || filling.has(mirrorDir)) return;
  const dir = path.join(path.resolve(workDir), `.spare-${randomBytes(8).toString('hex')}`);
  const done = fill(mirrorDir, dir, commit, timeoutMs).finally(() => filling.delete(mirrorDir));
  filling.set(mirrorDir, { dir, done });
}

async function fill(mirrorDir: string, dir: string, commit: string, timeoutMs: number): Promise<void> {
  try {
    mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
    await addWorktree(mirrorDir, dir, ['--detach'], commit, timeoutMs);
    await sleep(RACY_WINDOW_MS);
    await gitMaybe(['update-index', '-q', '--refresh'], { cwd: dir, timeoutMs });
    ready.set(mirrorDir, { dir, commit, readyAt: Date.now() });
  } catch {
    // A spare is only a head start: without it the next session checks out its tree itself.
    await removeWorktree(mirrorDir, dir, undefined, timeoutMs).catch(() => undefined);
  }
}

/** The spare dirs this process holds (ready or being made): any other `.spare-*` in a work dir is a leftover. */
export function heldSpareDirs(): Set<string> {
  return new Set([...[...ready.values()].map((s) => s.dir), ...[...filling.values()].map((f) => f.dir)]);
}

/** Ready spares made before `cutoff` (ms), taken out of the pool for removal. */
export function takeSparesOlderThan(cutoff: number): { mirrorDir: string; spare: Spare }[] {
  const old = [...ready.entries()].filter(([, s]) => s.readyAt < cutoff).map(([mirrorDir, spare]) => ({ mirrorDir, spare }));
  for (const { mirrorDir } of old) ready.delete(mirrorDir);
  return old;
}

/** Resolves when no spare is being made: for a drain, a benchmark or a test that deletes the dirs next. */
export async function sparesSettled(): Promise<void> {
  while (filling.size > 0) await Promise.all([...filling.values()].map((f) => f.done));
}
