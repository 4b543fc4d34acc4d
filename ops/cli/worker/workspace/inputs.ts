import { isSessionId } from '../server-ids.js';
import { git, GitError, WorkspaceError } from './git.js';

/**
 * The checks on what the server hands the worker for a workspace, made again here although the server makes them
 * (defence in depth): a session id, a repository id and a ref become paths and git arguments, a URL is given to git.
 * A value that starts with `-` would be read by git as an option, so none is accepted anywhere.
 */
export interface WorkspaceRepository {
  /** The server's repository id; names the mirror, `<state dir>/mirrors/<id>.git`. */
  readonly id: string;
  readonly url: string;
  readonly defaultBranch?: string;
}

export const repositoryIdPattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const commitPattern = /^[0-9a-fA-F]{7,40}$/;
export const fullCommitPattern = /^[0-9a-f]{40}$/;
const MAX_URL_CHARS = 2048;
const MAX_REF_CHARS = 255;

const refuse = (what: string, value: unknown, why: string): never => {
  throw new WorkspaceError('invalid-input', `refusing ${what} ${JSON.stringify(String(value)).slice(0, 120)}: ${why}`);
};

export function checkSessionId(sessionId: unknown): string {
  if (!isSessionId(sessionId)) refuse('the session id', sessionId, 'not 16 hex characters');
  return sessionId as string;
}

/**
 * A repository URL git may fetch: `https://`, `ssh://`, scp-like `user@host:path`, and `file://` when the worker
 * allows it as the server does (`TROUPE_ALLOW_FILE_REPOSITORIES=1`; else a server could have any repository on the
 * worker's disk cloned into an agent's reach). Refused: a leading
 * `-`, a transport helper (`ext::…`, anything with `::`), an `--upload-pack`/`--receive-pack` smuggled in, a host
 * that starts with `-` (read by ssh as an option), whitespace or control characters.
 */
export function checkRepositoryUrl(url: unknown, allowFile: boolean): string {
  if (typeof url !== 'string' || url.length === 0 || url.length > MAX_URL_CHARS) return refuse('the repository URL', url, 'not a string of 1 to 2048 characters');
  if (url.startsWith('-')) refuse('the repository URL', url, 'starts with "-"');
  if (url.includes('::')) refuse('the repository URL', url, 'a transport helper ("::") is not a repository');
  if (/--(upload|receive)-pack/i.test(url)) refuse('the repository URL', url, 'carries a git option');
  if (/[\s\u0000-\u001f\u007f]/.test(url)) refuse('the repository URL', url, 'contains whitespace or control characters');
  const scpLike = /^[A-Za-z0-9._~][A-Za-z0-9._~-]*@([A-Za-z0-9.-]+):(?!\/\/)(.+)$/.exec(url);
  if (scpLike) {
    if (scpLike[1]!.startsWith('-')) refuse('the repository URL', url, 'its host starts with "-"');
    return url;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('the repository URL', url, 'not https://, ssh://, file:// or user@host:path');
  }
  if (!['https:', 'ssh:', 'file:'].includes(parsed.protocol)) refuse('the repository URL', url, `the scheme ${parsed.protocol} is not https, ssh or file`);
  if (parsed.hostname.startsWith('-')) refuse('the repository URL', url, 'its host starts with "-"');
  if (parsed.protocol !== 'file:' && parsed.hostname === '') refuse('the repository URL', url, 'has no host');
  if (parsed.protocol === 'file:' && !allowFile) refuse('the repository URL', url, 'file:// repositories are allowed only with TROUPE_ALLOW_FILE_REPOSITORIES=1');
  return url;
}

export function checkRepository(repository: unknown, allowFile: boolean): WorkspaceRepository {
  const r = repository as Partial<WorkspaceRepository> | null;
  if (typeof r !== 'object' || r === null) return refuse('the repository', repository, 'not an object');
  if (typeof r.id !== 'string' || !repositoryIdPattern.test(r.id)) refuse('the repository id', r.id, 'not an id');
  checkRepositoryUrl(r.url, allowFile);
  if (r.defaultBranch !== undefined && typeof r.defaultBranch !== 'string') refuse('the default branch', r.defaultBranch, 'not a string');
  return { id: r.id!, url: r.url!, ...(r.defaultBranch !== undefined ? { defaultBranch: r.defaultBranch } : {}) };
}

/**
 * A ref to start from: a commit (7–40 hex), or a name that `git check-ref-format --allow-onelevel` accepts (a branch,
 * a tag, `refs/heads/x`). git decides what a valid name is; a leading `-` is refused before git ever sees it.
 */
export async function checkRef(ref: unknown, timeoutMs: number): Promise<string> {
  if (typeof ref !== 'string' || ref.length === 0 || ref.length > MAX_REF_CHARS) return refuse('the ref', ref, 'not a string of 1 to 255 characters');
  if (ref.startsWith('-')) refuse('the ref', ref, 'starts with "-"');
  if (commitPattern.test(ref)) return ref;
  try {
    await git(['check-ref-format', '--allow-onelevel', ref], { cwd: '/', timeoutMs });
  } catch (err) {
    if (err instanceof GitError && err.code === 'git-failed') refuse('the ref', ref, 'not a valid branch, tag or commit name');
    throw err;
  }
  return ref;
}
