import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * Every git command of the workspace code goes through `git()`: the binary with an argv array (never a shell, so no
 * text from the server or an agent is ever parsed as a command), in its own process group so that a timeout ends it
 * and whatever it started (ssh, index-pack), with no terminal to prompt on. A failure carries git's own stderr, with
 * any `user:password@` of a URL cut out, so it can go into a report or a log as it is.
 */
export type WorkspaceErrorCode = 'invalid-input' | 'ref-not-found' | 'dir-taken' | 'dir-gone' | 'git-failed' | 'git-timeout' | 'git-missing';

export class WorkspaceError extends Error {
  constructor(readonly code: WorkspaceErrorCode, message: string) {
    super(message);
    this.name = 'WorkspaceError';
  }
}

export class GitError extends WorkspaceError {
  constructor(
    code: 'git-failed' | 'git-timeout',
    readonly subcommand: string,
    readonly exitCode: number | null,
    /** What git wrote on stderr, credentials cut out, trimmed. */
    readonly gitMessage: string,
  ) {
    super(code, code === 'git-timeout'
      ? `git ${subcommand} timed out${gitMessage ? `: ${gitMessage}` : ''}`
      : `git ${subcommand} failed (exit ${exitCode ?? 'signal'})${gitMessage ? `: ${gitMessage}` : ''}`);
    this.name = 'GitError';
  }
}

/** How long a git command may take: talking to the remote (clone, fetch, push), or only to local files. */
export interface WorkspaceTimeouts {
  readonly networkMs: number;
  readonly localMs: number;
}

export const defaultTimeouts: WorkspaceTimeouts = { networkMs: 10 * 60_000, localMs: 2 * 60_000 };

/** Credentials for the commands that reach the remote: `-c` pairs before the subcommand, and environment variables. */
export interface GitAuth {
  readonly config: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

export const noAuth: GitAuth = { config: [], env: {} };

export interface GitOptions {
  readonly cwd: string;
  readonly timeoutMs: number;
  /** Added to the environment (credentials for this command only, e.g. GIT_ASKPASS). */
  readonly env?: Readonly<Record<string, string>>;
  /** Written to git's stdin, then closed. */
  readonly input?: string;
}

/** `scheme://user:pass@host` → `scheme://host`, wherever it appears in `text`. */
export function redactCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1');
}

/**
 * Variables that would point git at another repository, index or config than the one a command names: a worker
 * started from inside a git hook or an IDE terminal inherits them, and they would silently redirect every command.
 */
const INHERITED_REPOSITORY_VARS = [
  'GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_COMMON_DIR',
  'GIT_NAMESPACE', 'GIT_PREFIX', 'GIT_CONFIG', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT', 'GIT_QUARANTINE_PATH',
];

function gitEnv(extra: Readonly<Record<string, string>> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of INHERITED_REPOSITORY_VARS) delete env[name];
  return {
    ...env,
    GIT_TERMINAL_PROMPT: '0',
    GCM_INTERACTIVE: 'never',
    // The transports a repository URL may use (the server accepts no other); `ext::` and friends can never run.
    GIT_ALLOW_PROTOCOL: 'https:ssh:file',
    // Messages and the diffstat line are parsed or shown as they are: the same language whatever the machine's.
    LC_ALL: 'C',
    ...extra,
  };
}

const MAX_STDOUT_BYTES = 64 * 1024 * 1024;
const MAX_STDERR_CHARS = 64 * 1024;
const MAX_MESSAGE_CHARS = 4000;

/** The first argument that is not a `-c name=value` pair or an option: the subcommand, for messages. */
function subcommandOf(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-c' || args[i] === '-C') { i++; continue; }
    if (!args[i]!.startsWith('-')) return args[i]!;
  }
  return '?';
}

/** git's stderr as a message: credentials cut, blank lines dropped, the end kept when long (the verdict is last). */
export function gitMessageOf(stderr: string, maxChars = MAX_MESSAGE_CHARS): string {
  const text = redactCredentials(stderr).split('\n').map((l) => l.trimEnd()).filter((l) => l !== '').join('\n');
  return text.length <= maxChars ? text : `…${text.slice(text.length - maxChars + 1)}`;
}

/**
 * Runs `git <args>` in `cwd` and resolves with its stdout. Our own commands never run the repository's hooks
 * (`core.hooksPath=/dev/null`): a hook is code from the repository or an agent, and the worker runs none of it.
 */
export function git(args: readonly string[], options: GitOptions): Promise<string> {
  const argv = ['-c', 'core.hooksPath=/dev/null', ...args];
  const subcommand = subcommandOf(args);
  return new Promise((resolve, reject) => {
    const child = spawn('git', argv, {
      cwd: options.cwd, env: gitEnv(options.env), detached: true,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let timedOut = false;
    let overflowed = false;
    const killGroup = () => {
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ }
    };
    const timer = setTimeout(() => { timedOut = true; killGroup(); }, options.timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > MAX_STDOUT_BYTES) { overflowed = true; killGroup(); return; }
      stdout.push(chunk);
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-MAX_STDERR_CHARS);
    });
    if (options.input !== undefined) {
      child.stdin!.on('error', () => { /* git exited before reading it all; its exit says why */ });
      child.stdin!.end(options.input);
    }
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      // spawn says ENOENT both for a missing program and for a missing working directory.
      if (err.code === 'ENOENT' && !existsSync(options.cwd)) reject(new WorkspaceError('dir-gone', `cannot run git ${subcommand}: ${options.cwd} no longer exists`));
      else reject(err.code === 'ENOENT' ? new WorkspaceError('git-missing', 'git is not installed or not on PATH') : err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (timedOut) reject(new GitError('git-timeout', subcommand, null, `no answer within ${options.timeoutMs} ms${stderr ? `; ${gitMessageOf(stderr)}` : ''}`));
      else if (overflowed) reject(new GitError('git-failed', subcommand, null, `more than ${MAX_STDOUT_BYTES} bytes of output`));
      else if (code !== 0) reject(new GitError('git-failed', subcommand, code, gitMessageOf(stderr)));
      else resolve(Buffer.concat(stdout).toString('utf8'));
    });
  });
}

/** Like `git()`, but a failure (not a timeout or a missing git) answers undefined: for questions such as "is there a ref". */
export async function gitMaybe(args: readonly string[], options: GitOptions): Promise<string | undefined> {
  try {
    return await git(args, options);
  } catch (err) {
    if (err instanceof GitError && err.code === 'git-failed') return undefined;
    throw err;
  }
}
