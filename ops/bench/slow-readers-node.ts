import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { generateMasterKey } from '../secrets.js';
import { uncappedBenchLimits } from './harness.js';

/**
 * The node the slow-readers drive (slow-readers.ts) measures: a real node process on embedded engines, whose
 * "event stream cut off" log lines are kept with the time each was read.
 */

/** How the node process is launched. */
export interface NodeLaunch {
  /** Node process arguments before the script (the bench pins with taskset through `command`). */
  readonly command?: readonly string[];
  /** Extra environment for the node. */
  readonly env?: NodeJS.ProcessEnv;
  /** Node flags before the script (`--cpu-prof`, `--trace-gc`). */
  readonly nodeArgs?: readonly string[];
  /** The checkout whose node runs (a baseline worktree with its own node_modules link); default this one. */
  readonly root?: string;
  /** Lines of the node's stdout that are not its JSON log (`--trace-gc` output). */
  readonly onNodeLine?: (line: string) => void;
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const now = () => performance.timeOrigin + performance.now();

export interface NodeUnderTest { readonly child: ChildProcess; readonly port: number; readonly cutOffs: Array<{ at: number; line: any }>; stop(): Promise<void> }

export async function startNode(options: NodeLaunch, adminToken: string, dataDir: string, memoryFile: string): Promise<NodeUnderTest> {
  const args = [
    ...(options.command ?? []), process.execPath, '--expose-gc', ...(options.nodeArgs ?? []), '--import', path.join(repoRoot, 'ops/bench/gc-on-signal.mjs'),
    '--import', 'tsx', 'ops/main.ts',
  ];
  const child = spawn(args[0]!, args.slice(1), {
    cwd: options.root ?? repoRoot,
    env: {
      ...process.env, ...uncappedBenchLimits, TROUPE_MASTER_KEY: generateMasterKey(), TROUPE_ADMIN_TOKEN: adminToken, TROUPE_DATA_DIR: dataDir,
      PORT: '0', HOST: '127.0.0.1', TROUPE_LOG_LEVEL: 'info', BENCH_MEMORY_FILE: memoryFile,
      // One worker posting tens of times a second: the per-credential limits are not what is measured.
      TROUPE_RATE_LIMIT_WRITES_PER_MINUTE: '10000000', TROUPE_RATE_LIMIT_DISPATCHES_PER_MINUTE: '10000000',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const cutOffs: NodeUnderTest['cutOffs'] = [];
  const tail: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    // A node that never says ready is stopped here: the caller has no handle on it yet. 180 s: on a machine at load
    // ~13, tsx compiling the tree took longer than 90 s once.
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`node not ready within 180 s:\n${tail.join('\n')}`)); }, 180_000);
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`node exited with ${code}:\n${tail.join('\n')}`)); });
    createInterface({ input: child.stderr! }).on('line', (line) => { tail.push(line); if (tail.length > 40) tail.shift(); });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('event stream cut off')) cutOffs.push({ at: now(), line: JSON.parse(line) });
      else if (line.includes('troupe node ready')) { clearTimeout(timer); resolve(JSON.parse(line).port as number); }
      else {
        if (!line.startsWith('{')) options.onNodeLine?.(line);
        tail.push(line); if (tail.length > 40) tail.shift();
      }
    });
  });
  return {
    child, port, cutOffs,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => { clearTimeout(kill); resolve(); });
      child.kill('SIGINT');
    }),
  };
}

/** POSTs `body` as JSON and answers the parsed reply; anything but a 2xx is thrown with its body. */
export async function postJson(url: string, token: string | undefined, body: unknown): Promise<any> {
  const res = await fetch(url, {
    method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(15_000),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${url} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}
