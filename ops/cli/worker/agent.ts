import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { insideDir } from './inside-dir.js';
import { isSessionId } from './server-ids.js';

/**
 * One agent process (the agent contract, README "The agent contract"): `command` through `/bin/sh -c` in a fresh
 * directory, as the leader of its own process group (so a stop reaches everything it started), with the session in
 * its environment and the prompt as the first line of its stdin. Stdout is read line by line: a line that is exactly
 * `{"troupe": {"costUsd": N}}` reports the cost so far, any other line is output.
 */
export interface AgentSpec {
  readonly sessionId: string;
  readonly command: string;
  readonly workDir: string;
  readonly prompt: string;
  readonly env: Record<string, string>;
}

export interface AgentHooks {
  onOutput(line: string): void;
  onCost(costUsd: number): void;
  onStderr(line: string): void;
}

export interface AgentExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** The cost line, exactly a JSON object with one member `troupe` holding one member `costUsd`, a number ≥ 0. */
export function costOf(line: string): number | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{') || !trimmed.includes('"troupe"')) return undefined;
  try {
    const v = JSON.parse(trimmed) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v) || Object.keys(v).length !== 1) return undefined;
    const inner = (v as { troupe?: unknown }).troupe;
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner) || Object.keys(inner).length !== 1) return undefined;
    const cost = (inner as { costUsd?: unknown }).costUsd;
    return typeof cost === 'number' && Number.isFinite(cost) && cost >= 0 ? cost : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A fresh directory for the session under `root`: `<sessionId>`, or `<sessionId>.2`, … when a run already used it.
 * The agent runs there, so a session id that is not one, or a directory that would not be inside `root`, is refused.
 */
export function freshDir(root: string, sessionId: string): string {
  if (!isSessionId(sessionId)) throw new Error(`refusing a work dir for ${JSON.stringify(sessionId).slice(0, 80)}: not a session id`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  let dir = insideDir(root, sessionId);
  for (let n = 2; existsSync(dir); n++) dir = insideDir(root, `${sessionId}.${n}`);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

export class Agent {
  readonly child: ChildProcess;
  readonly exited: Promise<AgentExit>;
  private stdinOpen = true;

  constructor(spec: AgentSpec, hooks: AgentHooks) {
    // The shell that runs the command is the group's leader; a SIGHUP (credential rotation) meant for the agent
    // would end it, and its exit would end the session. A trap keeps it alive; its children still get the default.
    this.child = spawn('/bin/sh', ['-c', `trap : HUP\n${spec.command}`], {
      cwd: spec.workDir, env: spec.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'],
    });
    const closed = new Promise<void>((resolve) => this.child.once('close', () => resolve()));
    // Exit is the shell's; its output is read to the end unless something it left behind holds stdout open.
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        const grace = new Promise<void>((r) => setTimeout(r, 2000).unref());
        void Promise.race([closed, grace]).then(() => resolve({ code, signal }));
      });
      this.child.once('error', () => resolve({ code: 127, signal: null }));
    });
    this.child.stdin!.on('error', () => { this.stdinOpen = false; });
    this.child.stdin!.on('close', () => { this.stdinOpen = false; });
    createInterface({ input: this.child.stdout!, crlfDelay: Infinity }).on('line', (line) => {
      const cost = costOf(line);
      if (cost !== undefined) hooks.onCost(cost);
      else hooks.onOutput(`${line}\n`);
    });
    createInterface({ input: this.child.stderr!, crlfDelay: Infinity }).on('line', (line) => hooks.onStderr(line));
    this.writeLine(spec.prompt);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** A prompt line on stdin (newlines inside it become spaces: one prompt, one line). */
  writeLine(text: string): boolean {
    if (!this.stdinOpen || this.child.stdin!.destroyed) return false;
    this.child.stdin!.write(`${text.replace(/\r?\n/g, ' ')}\n`);
    return true;
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
}
