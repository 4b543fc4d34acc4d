import type { Logger } from './logger.js';

/**
 * Warnings that come in floods: the same failure for every request while a dependency is down (issue 20). The first
 * of each kind in a window is logged in full; the rest are counted and summed up in one line when the window ends.
 * At a thousand refusals a second, a line each cost the node more than the refusals (pino writes synchronously,
 * and a slow reader of its output stalls it), and told an operator nothing the first line did not.
 */
const WINDOW_MS = 5_000;

interface Window {
  suppressed: number;
}

/**
 * By kind, for the process: the loggers that flood are children (one per actor, per request), so a window per logger
 * would be a window per line. Two nodes in one process (tests) share the windows; their first lines still show.
 */
const windows = new Map<string, Window>();

export function warnOncePerWindow(log: Logger, kind: string, fields: Record<string, unknown>, msg: string, windowMs = WINDOW_MS): void {
  const open = windows.get(kind);
  if (open !== undefined) {
    open.suppressed += 1;
    return;
  }
  log.warn(fields, msg);
  const window: Window = { suppressed: 0 };
  windows.set(kind, window);
  setTimeout(() => {
    windows.delete(kind);
    if (window.suppressed > 0) log.warn({ kind, suppressed: window.suppressed, windowMs }, `${msg} (${window.suppressed} more like it in ${windowMs / 1000} s)`);
  }, windowMs).unref();
}

/**
 * The warnings knex writes itself: one per failed pool acquisition ("Acquire connection error: <stack>") and per
 * broken connection ("Connection Error: …"), ~0.6–1 KB each with the stack. When the pool stalls they come in
 * bursts (65 at once when 5 s acquisition timeouts expired together in a fault run, 120 KB of them in 43 s), written
 * synchronously like every line (decision 0058). Those two go through the window by their first line; anything else
 * knex or the storage layer says (the breaker opening and closing) is written as it comes.
 */
export function driverWarnings(log: Logger): (msg: string) => void {
  return (msg) => {
    if (!/^(Acquire connection error|Connection Error): /.test(msg)) {
      log.warn(msg);
      return;
    }
    const firstLine = msg.split('\n', 1)[0]!.slice(0, 120);
    warnOncePerWindow(log, `driver:${firstLine}`, {}, firstLine === msg ? msg : `${firstLine} (stack: ${msg.slice(firstLine.length + 1, firstLine.length + 400).trim()})`);
  };
}
