import { readFileSync } from 'node:fs';

/** What the kernel says of a process or of the machine's connections, read from /proc by the SSE benches. */

/** VmRSS of a process, kB. */
export const rssKb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

/** Time a process's main thread spent runnable but waiting for a CPU so far, ms (/proc/<pid>/schedstat, field 2). */
export const runQueueWaitMs = (pid: number): number => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;

/** Send and receive queues of every loopback TCP connection, keyed by `localPort>remotePort`. */
export function tcpQueues(): Map<string, { tx: number; rx: number }> {
  const out = new Map<string, { tx: number; rx: number }>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5) continue;
      const local = parseInt(f[1]!.split(':').at(-1)!, 16);
      const remote = parseInt(f[2]!.split(':').at(-1)!, 16);
      const [tx, rx] = f[4]!.split(':').map((h) => parseInt(h, 16));
      out.set(`${local}>${remote}`, { tx: tx!, rx: rx! });
    }
  }
  return out;
}
