/**
 * What a repository URL, a ref and a repository name may be (issue 34, decision 0075). Workers hand these to git as
 * arguments (`git clone --mirror URL`, `git worktree add … REF`), so anything git could read as an option or a
 * transport helper is refused here, at registration and dispatch; the worker checks again before it runs git.
 */

export const MAX_REPOSITORY_URL_LENGTH = 2048;
export const MAX_REF_LENGTH = 200;
export const MAX_REPOSITORY_NAME_LENGTH = 100;
export const DEFAULT_BRANCH = 'main';

/** The agent presets a worker knows (`troupe worker --agent`); a dispatch may ask for one. */
export const AGENT_PRESETS = ['command', 'claude-code', 'codex', 'gemini'] as const;
export type AgentPreset = (typeof AGENT_PRESETS)[number];

/**
 * A ref git accepts as a branch or tag name (`git check-ref-format --allow-onelevel`), kept to a plain character set;
 * a 7–40 hex commit matches it too. No leading `-` (an option), `.` or `/`; no `..`, `//`, `/.`; no trailing `/` or
 * `.`; no component ending in `.lock`; not `@` alone.
 */
export const REF_PATTERN = '^(?![-./])(?!.*\\.\\.)(?!.*//)(?!.*/\\.)(?!.*\\.lock(?:/|$))(?!.*[./]$)(?!@$)[A-Za-z0-9._/+@-]+$';
const refPattern = new RegExp(REF_PATTERN);

/** A repository's name within its project: what dispatch and workflow nodes may call it by. */
export const REPOSITORY_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*$';
const namePattern = new RegExp(REPOSITORY_NAME_PATTERN);

export function refProblem(ref: string): string | null {
  if (ref.length === 0 || ref.length > MAX_REF_LENGTH) return `must be 1 to ${MAX_REF_LENGTH} characters`;
  if (ref.startsWith('-')) return 'must not start with "-"';
  if (!refPattern.test(ref)) return 'must be a branch or tag name git accepts (letters, digits, . _ / + @ -) or a 7-40 hex commit';
  return null;
}

export function repositoryNameProblem(name: string): string | null {
  if (name.length === 0 || name.length > MAX_REPOSITORY_NAME_LENGTH) return `must be 1 to ${MAX_REPOSITORY_NAME_LENGTH} characters`;
  if (!namePattern.test(name)) return 'must start with a letter or digit and hold only letters, digits, ".", "_" and "-"';
  return null;
}

/** `[user@]host:path`, git's scp-like form: no scheme, and a path that is not `//…`. */
const scpLike = /^(?:([A-Za-z0-9._~-]+)@)?([A-Za-z0-9.-]+):(?!\/\/)(.+)$/;

/**
 * Why git must not be given this URL, or null when it may. Accepted: `https://host/…`, `ssh://[user@]host/…`,
 * `user@host:path`, and `file:///path` only where the operator allows file repositories (tests, single machines).
 */
export function repositoryUrlProblem(url: string, allowFile: boolean): string | null {
  if (url.length === 0 || url.length > MAX_REPOSITORY_URL_LENGTH) return `must be 1 to ${MAX_REPOSITORY_URL_LENGTH} characters`;
  // Whitespace, control characters and anything beyond printable ASCII (percent-encode it): nothing a shell, a log
  // line or a terminal could be tricked by.
  if (!/^[\x21-\x7e]+$/.test(url)) return 'must hold only printable ASCII characters, no whitespace or control characters';
  if (url.startsWith('-')) return 'must not start with "-" (git would read it as an option)';
  if (url.includes('::')) return 'must not name a git transport helper (ext::, fd::, <helper>::)';
  if (/--(upload|receive)-pack|--config|--exec/i.test(url)) return 'must not carry a git option (--upload-pack and the like)';
  // A component starting with "-" (`-u…`, `-oProxyCommand=…`) is an option to git or ssh wherever it lands.
  if (/[/:@?#&=+]-/.test(url)) return 'no part of it may start with "-" (git or ssh would read it as an option)';
  const scp = scpLike.exec(url);
  if (scp && !/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url)) {
    if (scp[1] === undefined) return 'the scp-like form needs a user: user@host:path';
    return null;
  }
  // The URL parser forgives `https:///host/path` (it takes `host` for the host); git would not see one.
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\/\//.test(url) && !/^file:/i.test(url)) return 'must name a host';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be https://, ssh://, user@host:path or (where allowed) file:// URL';
  }
  switch (parsed.protocol) {
    case 'https:':
      if (parsed.username !== '' || parsed.password !== '') return 'must not carry credentials (user:password@); git uses the machine\'s own';
      break;
    case 'ssh:':
      if (parsed.password !== '') return 'must not carry a password';
      break;
    case 'file:':
      if (!allowFile) return 'file:// repositories are not allowed on this node (TROUPE_ALLOW_FILE_REPOSITORIES)';
      if (parsed.host !== '' && parsed.host !== 'localhost') return 'a file:// URL names a path on the worker, not a host';
      return parsed.pathname.length > 1 ? null : 'a file:// URL needs a path';
    default:
      return `the scheme ${parsed.protocol.replace(/:$/, '')} is not one of https, ssh${allowFile ? ', file' : ''}`;
  }
  if (parsed.hostname === '') return 'must name a host';
  if (parsed.search !== '' || parsed.hash !== '') return 'must not carry a query or fragment';
  return null;
}

/** The name a repository gets when none is given: the URL's last path segment without `.git`. */
export function defaultRepositoryName(url: string): string {
  const path = (scpLike.exec(url)?.[3] ?? safePath(url)).replace(/[/]+$/, '');
  const last = path.slice(path.lastIndexOf('/') + 1).replace(/\.git$/i, '');
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

function safePath(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}
