import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, existsSync, openSync, closeSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import type { AgentEvent, AgentInvocation, LineParser } from './agents/index.js';
import { insideDir } from './inside-dir.js';
import { isSessionId } from './server-ids.js';

/**
 * One agent process: the preset's program spawned without a shell (`--agent command` runs `/bin/sh -c CMD`, the
 * agent contract), as the leader of its own process group (so a stop reaches everything it started), with the
 * session in its environment. Stdin is what the preset asks for (the prompt as a first line and kept open, a text
 * then closed, or nothing). Stdout is read line by line through the preset's parser, whose events the hooks get.
 */
export interface AgentSpec {
  readonly sessionId: string;
  readonly invocation: AgentInvocation;
  readonly parser: LineParser;
  readonly workDir: string;
  readonly prompt: string;
  readonly env: Record<string, string>;
}

export interface AgentHooks {
  onEvent(event: AgentEvent): void;
  onStderr(line: string): void;
}

export interface AgentExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Why the program could not be started at all (`spawn claude ENOENT`). */
  readonly startError?: string;
}

/**
 * The session's directory under `root`. A first run takes a fresh one: `<sessionId>`, or `<sessionId>.2`, … when an
 * earlier attempt left it. A follow-up continues in `<sessionId>`, where the earlier runs left their work. The agent
 * runs there, so a session id that is not one, or a directory that would not be inside `root`, is refused.
 */
export function sessionDir(root: string, sessionId: string, followUp: boolean): string {
  if (!isSessionId(sessionId)) throw new Error(`refusing a work dir for ${JSON.stringify(sessionId).slice(0, 80)}: not a session id`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  let dir = insideDir(root, sessionId);
  if (followUp) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }
  for (let n = 2; existsSync(dir); n++) dir = insideDir(root, `${sessionId}.${n}`);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

/** A first run's fresh directory (the agent contract's `<sessionId>`, `<sessionId>.2`, …). */
export const freshDir = (root: string, sessionId: string): string => sessionDir(root, sessionId, false);

const FEED_ERROR = 'the agent parser failed on a line; it is kept as output';

export class Agent {
  readonly child: ChildProcess;
  readonly exited: Promise<AgentExit>;
  private stdinOpen: boolean;
  private readonly stdoutLines: Interface;
  private hasExited = false;
  private stdoutPaused = false;
  private stdoutClosed = false;

  constructor(spec: AgentSpec, private readonly hooks: AgentHooks) {
    const stdin = spec.invocation.stdin;
    const devNull = stdin.kind === 'none' ? openSync('/dev/null', 'r') : undefined;
    try {
      this.child = spawn(spec.invocation.bin, [...spec.invocation.args], {
        cwd: spec.workDir, env: spec.env, detached: true, stdio: [devNull ?? 'pipe', 'pipe', 'pipe'],
      });
    } finally {
      if (devNull !== undefined) closeSync(devNull);
    }
    this.stdinOpen = stdin.kind === 'prompt-lines';
    let startError: string | undefined;
    const closed = new Promise<void>((resolve) => this.child.once('close', () => resolve()));
    // Exit is the leader's; its output is read to the end unless something it left behind holds stdout open.
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        // What is left in the pipe is read to the end now, whatever backlog paused it: the agent writes no more.
        this.hasExited = true;
        this.resumeOutput();
        const grace = new Promise<void>((r) => setTimeout(r, 2000).unref());
        void Promise.race([closed, grace]).then(() => resolve({ code, signal }));
      });
      this.child.once('error', (err) => {
        startError = err.message;
        resolve({ code: 127, signal: null, startError });
      });
    });
    const input = this.child.stdin;
    if (input) {
      input.on('error', () => { this.stdinOpen = false; });
      input.on('close', () => { this.stdinOpen = false; });
      if (stdin.kind === 'prompt-lines') this.writeLine(spec.prompt);
      else if (stdin.kind === 'text') input.end(stdin.text);
    }
    const parser = spec.parser;
    const lines = createInterface({ input: this.child.stdout!, crlfDelay: Infinity });
    this.stdoutLines = lines;
    lines.on('line', (line) => this.emit(() => parser.feed(line), line));
    lines.on('close', () => {
      this.stdoutClosed = true;
      this.emit(() => parser.end(), undefined);
    });
    createInterface({ input: this.child.stderr!, crlfDelay: Infinity }).on('line', (line) => hooks.onStderr(line));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether later prompts reach the agent on stdin (the command contract) rather than as a follow-up run. */
  get readsPrompts(): boolean {
    return this.stdinOpen;
  }

  /** A prompt line on stdin (newlines inside it become spaces: one prompt, one line). */
  writeLine(text: string): boolean {
    const input = this.child.stdin;
    if (!this.stdinOpen || !input || input.destroyed) return false;
    input.write(`${text.replace(/\r?\n/g, ' ')}\n`);
    return true;
  }

  /** Stops reading the agent's stdout: it waits on a full pipe until `resumeOutput` (the relay's backlog). */
  pauseOutput(): void {
    if (this.hasExited || this.stdoutClosed || this.stdoutPaused) return;
    this.stdoutPaused = true;
    this.stdoutLines.pause();
  }

  resumeOutput(): void {
    if (!this.stdoutPaused || this.stdoutClosed) return;
    this.stdoutPaused = false;
    this.stdoutLines.resume();
  }

  /** Signals the whole process group; false when it is gone. */
  signal(sig: NodeJS.Signals): boolean {
    const pid = this.child.pid;
    if (pid === undefined) return false;
    try {
      process.kill(-pid, sig);
      return true;
    } catch {
      return false;
    }
  }

  /** A parser never throws by contract; should one, the line is still the session's output and the worker lives. */
  private emit(parse: () => AgentEvent[], line: string | undefined): void {
    let events: AgentEvent[];
    try {
      events = parse();
    } catch {
      this.hooks.onStderr(FEED_ERROR);
      events = line === undefined ? [] : [{ kind: 'output', text: line }];
    }
    for (const event of events) this.hooks.onEvent(event);
  }
}
