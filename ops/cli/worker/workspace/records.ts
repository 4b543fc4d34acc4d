import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { insideDir } from '../inside-dir.js';
import { isSessionId } from '../server-ids.js';
import { repositoryIdPattern } from './inputs.js';

/**
 * `<state dir>/workspaces/<sessionId>.json`: which repository's mirror holds a session's worktree and where it is.
 * The file's mtime is the workspace's last use (prepared or finished), which the sweep compares with
 * `--keep-workspaces`. It is written before the worktree is made, so a crash never leaves a worktree the sweep
 * does not know.
 */
export interface WorkspaceRecord {
  readonly sessionId: string;
  readonly repositoryId: string;
  /** The worktree, `<work dir>/<sessionId>` (absolute). */
  readonly dir: string;
  /** Milliseconds since the epoch. */
  readonly usedAt: number;
}

const recordsDir = (stateDir: string) => path.resolve(stateDir, 'workspaces');

export function touchRecord(stateDir: string, record: Omit<WorkspaceRecord, 'usedAt'>): void {
  const dir = recordsDir(stateDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = insideDir(dir, `${record.sessionId}.json`);
  const tmp = `${file}.${process.pid}.tmp`;
  const { sessionId, repositoryId, dir: worktreeDir } = record;
  writeFileSync(tmp, JSON.stringify({ sessionId, repositoryId, dir: worktreeDir }), { mode: 0o600 });
  renameSync(tmp, file);
}

export function readRecord(stateDir: string, sessionId: string): WorkspaceRecord | undefined {
  try {
    const file = insideDir(recordsDir(stateDir), `${sessionId}.json`);
    const saved = JSON.parse(readFileSync(file, 'utf8')) as Omit<WorkspaceRecord, 'usedAt'>;
    // Only ever written by this code, but what it names gets deleted: it must name this session's worktree.
    const sound = saved.sessionId === sessionId && typeof saved.repositoryId === 'string' && repositoryIdPattern.test(saved.repositoryId)
      && typeof saved.dir === 'string' && path.isAbsolute(saved.dir) && path.basename(saved.dir) === sessionId;
    if (!sound) return undefined;
    return { ...saved, usedAt: statSync(file).mtimeMs };
  } catch {
    return undefined;
  }
}

export function listRecords(stateDir: string): WorkspaceRecord[] {
  let names: string[];
  try {
    names = readdirSync(recordsDir(stateDir));
  } catch {
    return [];
  }
  return names
    .filter((f) => f.endsWith('.json') && isSessionId(f.slice(0, -'.json'.length)))
    .map((f) => readRecord(stateDir, f.slice(0, -'.json'.length)))
    .filter((r): r is WorkspaceRecord => r !== undefined);
}

export function dropRecord(stateDir: string, sessionId: string): void {
  rmSync(insideDir(recordsDir(stateDir), `${sessionId}.json`), { force: true });
}
