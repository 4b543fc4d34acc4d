import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { insideDir } from '../inside-dir.js';
import { git, WorkspaceError, type GitAuth, type WorkspaceTimeouts } from './git.js';
import { FreshRun, KeyedMutex } from './lock.js';

/**
 * One mirror per repository id, `<state dir>/mirrors/<id>.git`: a bare repository that fetches all of origin's
 * branches into `refs/remotes/origin/*` and its tags into `refs/tags/*`. Not a literal `clone --mirror`: that maps
 * origin's branches onto `refs/heads/*`, where the sessions' own branches (`troupe/<id>`, one per worktree) live, and
 * then `fetch --prune` deletes every session branch origin does not have yet, under the agents working on them
 * (decision 0074). Fetches of one mirror never overlap (`repositoryMutex`, also held by the worktree operations that
 * must not interleave with each other); concurrent sessions share a fetch that started after they asked.
 */
export const repositoryMutex = new KeyedMutex();
const fetches = new FreshRun(repositoryMutex);
/** The origin URL each mirror was last set to by this process, so a fetch does not reread its config each time. */
const originUrls = new Map<string, string>();

export function mirrorDirOf(stateDir: string, repositoryId: string): string {
  return insideDir(path.resolve(stateDir, 'mirrors'), `${repositoryId}.git`);
}

export interface MirrorAccess {
  readonly auth: GitAuth;
  readonly timeouts: WorkspaceTimeouts;
}

/** The mirror of the repository at `url`, created when missing, and fetched by a fetch that began after this call. */
export async function refreshMirror(mirrorDir: string, url: string, access: MirrorAccess): Promise<void> {
  await fetches.request(mirrorDir, url, () => (existsSync(mirrorDir) ? fetchMirror(mirrorDir, url, access) : createMirror(mirrorDir, url, access)));
}

async function fetchMirror(mirrorDir: string, url: string, access: MirrorAccess): Promise<void> {
  const local = { cwd: mirrorDir, timeoutMs: access.timeouts.localMs };
  if (originUrls.get(mirrorDir) !== url) {
    const configured = (await git(['config', '--get', 'remote.origin.url'], local)).trim();
    if (configured !== url) await git(['config', 'remote.origin.url', url], local);
    originUrls.set(mirrorDir, url);
  }
  await git([...access.auth.config, 'fetch', '--prune', '--no-write-fetch-head', '--quiet', 'origin'], {
    cwd: mirrorDir, timeoutMs: access.timeouts.networkMs, env: access.auth.env,
  });
}

/** Made under a temporary name and renamed when its first fetch is done: a mirror that exists is a whole one. */
async function createMirror(mirrorDir: string, url: string, access: MirrorAccess): Promise<void> {
  mkdirSync(path.dirname(mirrorDir), { recursive: true, mode: 0o700 });
  const building = `${mirrorDir}.new-${randomBytes(4).toString('hex')}`;
  const local = { cwd: path.dirname(mirrorDir), timeoutMs: access.timeouts.localMs };
  try {
    await git(['init', '--bare', '--quiet', building], local);
    const inMirror = { ...local, cwd: building };
    await git(['config', 'remote.origin.url', url], inMirror);
    await git(['config', 'remote.origin.fetch', '+refs/heads/*:refs/remotes/origin/*'], inMirror);
    await git(['config', '--add', 'remote.origin.fetch', '+refs/tags/*:refs/tags/*'], inMirror);
    // An automatic gc runs inside the fetch that triggered it, so under the mirror's lock, not detached after it.
    await git(['config', 'gc.autoDetach', 'false'], inMirror);
    await git([...access.auth.config, 'fetch', '--prune', '--no-write-fetch-head', '--quiet', 'origin'], {
      cwd: building, timeoutMs: access.timeouts.networkMs, env: access.auth.env,
    });
    renameSync(building, mirrorDir);
    originUrls.set(mirrorDir, url);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

/**
 * The commit `ref` names in the mirror: origin's branch of that name, else a tag, else (7–40 hex) a commit; a full
 * `refs/heads/x` means origin's branch x. One `cat-file --batch-check` answers for every candidate at once.
 */
export async function resolveRef(mirrorDir: string, ref: string, timeoutMs: number): Promise<string> {
  const candidates = ref.startsWith('refs/heads/') ? [`refs/remotes/origin/${ref.slice('refs/heads/'.length)}`]
    : ref.startsWith('refs/') ? [ref]
      : [`refs/remotes/origin/${ref}`, `refs/tags/${ref}`, ...(/^[0-9a-fA-F]{7,40}$/.test(ref) ? [ref] : [])];
  const answer = await git(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
    cwd: mirrorDir, timeoutMs, input: candidates.map((c) => `${c}^{commit}\n`).join(''),
  });
  for (const line of answer.split('\n')) {
    const [sha, type] = line.split(' ');
    if (type === 'commit' && /^[0-9a-f]{40}$/.test(sha!)) return sha!;
  }
  throw new WorkspaceError('ref-not-found', `the ref ${JSON.stringify(ref)} is not a branch, tag or commit of the repository`);
}
