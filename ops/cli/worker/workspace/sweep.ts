import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { mirrorDirOf } from './mirror.js';
import { dropRecord, listRecords, readRecord } from './records.js';
import { removeWorktree, trashNamePattern } from './remove.js';
import { heldSpareDirs, spareNamePattern, takeSparesOlderThan } from './spare.js';
import { sessionLocks, workspacesInUse } from './sessions.js';

/**
 * `--keep-workspaces HOURS`: a worktree not prepared or finished for that long is removed with its local branch (the
 * mirror's space for it; a pushed branch stays on origin, and a later follow-up rebuilds from it). A workspace
 * prepared and not yet finished is never removed, however long its agent runs. Spares made before the cut-off and
 * spares left by an earlier process go too.
 */
export interface SweepOptions {
  readonly stateDir: string;
  readonly workDir: string;
  readonly keepHours: number;
  readonly timeoutMs: number;
  readonly now?: number;
}

export async function sweepWorkspaces(o: SweepOptions): Promise<{ readonly removed: readonly string[] }> {
  const cutoff = (o.now ?? Date.now()) - o.keepHours * 3_600_000;
  const removed: string[] = [];
  for (const record of listRecords(o.stateDir)) {
    if (record.usedAt >= cutoff || workspacesInUse.has(record.dir)) continue;
    await sessionLocks.run(record.dir, async () => {
      // Checked again under the session's lock: a follow-up may have prepared it meanwhile.
      const current = readRecord(o.stateDir, record.sessionId);
      if (current === undefined || current.usedAt >= cutoff || workspacesInUse.has(current.dir)) return;
      await removeWorktree(mirrorDirOf(o.stateDir, current.repositoryId), current.dir, `troupe/${current.sessionId}`, o.timeoutMs);
      dropRecord(o.stateDir, current.sessionId);
      removed.push(current.sessionId);
    });
  }
  for (const { mirrorDir, spare } of takeSparesOlderThan(cutoff)) await removeWorktree(mirrorDir, spare.dir, undefined, o.timeoutMs);
  await removeLeftoverSpares(path.resolve(o.workDir), o.timeoutMs);
  return { removed };
}

async function removeLeftoverSpares(workDir: string, timeoutMs: number): Promise<void> {
  if (!existsSync(workDir)) return;
  const held = heldSpareDirs();
  for (const name of readdirSync(workDir)) {
    const dir = path.join(workDir, name);
    // A removal interrupted by a crash leaves its renamed dir behind; git already forgot it.
    if (trashNamePattern.test(name)) rmSync(dir, { recursive: true, force: true });
    if (!spareNamePattern.test(name) || held.has(dir)) continue;
    const mirrorDir = mirrorOfWorktree(dir);
    if (mirrorDir !== undefined) await removeWorktree(mirrorDir, dir, undefined, timeoutMs);
    else rmSync(dir, { recursive: true, force: true });
  }
}

/** The mirror a worktree belongs to, from its `.git` file (`gitdir: <mirror>/worktrees/<name>`). */
function mirrorOfWorktree(dir: string): string | undefined {
  try {
    const gitdir = /^gitdir: (.+)$/m.exec(readFileSync(path.join(dir, '.git'), 'utf8'))?.[1]?.trim();
    return gitdir === undefined ? undefined : path.dirname(path.dirname(path.resolve(dir, gitdir)));
  } catch {
    return undefined;
  }
}
