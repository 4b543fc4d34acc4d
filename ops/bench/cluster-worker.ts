import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A process of the cluster bench (cluster.ts): started pinned to a core with an IPC channel, sent loads as messages
 * and answering each with one message; it says `{ready}` once started and exits on `{stop}`.
 */

export interface Worker {
  request<T>(message: unknown, timeoutMs: number): Promise<T>;
  /** CPU seconds (user + system) the process has used so far, from /proc: works for a checkout that cannot say. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

/** Linux reports a process's CPU time in clock ticks of 1/100 s (USER_HZ, fixed at 100 on every architecture). */
const TICKS_PER_SECOND = 100;

function cpuSecondsOf(pid: number): number {
  // Fields after the command name (which may hold spaces, so split after its closing parenthesis): utime is the
  // 14th field of the line and stime the 15th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Starts `script` pinned to `core` with an IPC channel and waits for its `{ready}`. */
export async function startWorker(script: string, args: readonly string[], core: string, nodeArgs: readonly string[] = []): Promise<Worker> {
  const child: ChildProcess = spawn('taskset', ['-c', core, process.execPath, ...nodeArgs, '--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const request = <T>(message: unknown, timeoutMs: number) =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => { cleanup(); reject(new Error(`${path.basename(script)} ${args.join(' ')} did not answer within ${timeoutMs} ms`)); }, timeoutMs);
      const onMessage = (reply: unknown) => { cleanup(); resolve(reply as T); };
      const onExit = (code: number | null) => { cleanup(); reject(new Error(`${path.basename(script)} exited with ${code}`)); };
      const cleanup = () => { clearTimeout(timer); child.off('message', onMessage); child.off('exit', onExit); };
      child.on('message', onMessage);
      child.once('exit', onExit);
      if (message !== undefined) child.send(message as object);
    });
  await request(undefined, 60_000);
  return {
    request,
    cpuSeconds: () => cpuSecondsOf(child.pid!),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.send({ stop: true });
      await exited;
      clearTimeout(kill);
    },
  };
}
