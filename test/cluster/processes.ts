import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/**
 * Troupe nodes as real OS processes (`node --import tsx ops/main.ts`), so a test can SIGKILL one. Each node's
 * port is 0; the port is read from its "troupe node ready" log line. `stopAll` kills whatever is still running.
 */
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface NodeProcess {
  readonly nodeId: string;
  readonly url: string;
  readonly child: ChildProcess;
  /** Log lines (pino JSON) seen so far, for assertions and for diagnosing a failure. */
  readonly lines: string[];
  exited(): boolean;
}

const running = new Set<ChildProcess>();

export async function startNodeProcess(nodeId: string, env: NodeJS.ProcessEnv, readyWithinMs = 60_000): Promise<NodeProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'ops/main.ts'], {
    cwd: repoRoot,
    env: { ...process.env, ...env, TROUPE_NODE_ID: nodeId, PORT: env.PORT ?? '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let exited = false;
  child.once('exit', () => {
    exited = true;
    running.delete(child);
  });
  const lines: string[] = [];
  const keep = (line: string) => {
    lines.push(line);
    if (lines.length > 5_000) lines.splice(0, 1_000);
  };
  createInterface({ input: child.stderr! }).on('line', keep);
  const ready = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${nodeId} not ready within ${readyWithinMs} ms:\n${lines.slice(-20).join('\n')}`)), readyWithinMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${nodeId} exited with ${code} before it was ready:\n${lines.slice(-20).join('\n')}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      keep(line);
      if (!line.includes('troupe node ready')) return;
      try {
        const port = (JSON.parse(line) as { port?: unknown }).port;
        if (typeof port === 'number') {
          clearTimeout(timer);
          resolve(port);
        }
      } catch {
        // not JSON: keep waiting
      }
    });
  });
  const port = await ready;
  return { nodeId, url: `http://127.0.0.1:${port}`, child, lines, exited: () => exited };
}

/** SIGKILL: no shutdown code runs, the kernel closes its sockets, as when a machine dies. */
export async function killNode(node: NodeProcess): Promise<void> {
  if (node.exited()) return;
  const gone = once(node.child, 'exit');
  node.child.kill('SIGKILL');
  await gone;
}

/** Asks every process this module started to stop, and SIGKILLs those still alive after `graceMs`. */
export async function stopAll(graceMs = 5_000): Promise<void> {
  await Promise.all([...running].map(async (child) => {
    const gone = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await gone;
    clearTimeout(timer);
  }));
}
