import { Worker } from 'node:worker_threads';
import type { Logger } from './kernel/logger.js';

/**
 * The bound on a whole shutdown (issue 20): once armed, the process is gone within `ms` whatever hangs. Two
 * guards, because the thing that hangs may be the main thread itself (pino's synchronous write to a stdout whose
 * reader stopped reading blocks in the kernel, and no timer of the main thread fires then):
 * - a main-thread timer at `ms` logs and exits with status 1 (the usual case: a close that never settles);
 * - a worker thread, whose timers run whatever the main thread does, SIGKILLs the process one second later.
 * Both are unref'd: a shutdown that finishes in time exits as usual.
 */
export const KILL_AFTER_DEADLINE_MS = 1_000;

export function armShutdownDeadline(ms: number, log: Logger): void {
  const timer = setTimeout(() => {
    log.error({ deadlineMs: ms }, 'shutdown deadline passed: exiting without finishing the drain');
    process.exit(1);
  }, ms);
  timer.unref();
  const watchdog = new Worker(
    `const { workerData } = require('node:worker_threads');
     setTimeout(() => process.kill(workerData.pid, 'SIGKILL'), workerData.ms);`,
    { eval: true, workerData: { pid: process.pid, ms: ms + KILL_AFTER_DEADLINE_MS } },
  );
  watchdog.unref();
}
