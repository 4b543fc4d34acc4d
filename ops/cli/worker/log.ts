/**
 * The worker's log: one line per event on stderr. Readable by default (`2025-01-01T12:00:00.000Z INFO  session
 * 3f2a… started pid 4242`), or one JSON object per line with `--log-format json` ({time, level, event, msg, ...}).
 */
export type LogFormat = 'text' | 'json';
export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface WorkerLog {
  (level: Level, event: string, msg: string, fields?: Record<string, unknown>): void;
}

export function createLog(format: LogFormat, write: (line: string) => void = (l) => process.stderr.write(l), debug = false): WorkerLog {
  return (level, event, msg, fields = {}) => {
    if (level === 'debug' && !debug) return;
    const time = new Date().toISOString();
    if (format === 'json') {
      write(`${JSON.stringify({ time, level, event, msg, ...fields })}\n`);
      return;
    }
    const extra = Object.entries(fields)
      .filter(([k, v]) => v !== undefined && k !== 'sessionId')
      .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`);
    const session = typeof fields.sessionId === 'string' ? `session ${fields.sessionId} ` : '';
    write(`${time} ${level.toUpperCase().padEnd(5)} ${session}${msg}${extra.length ? `  ${extra.join(' ')}` : ''}\n`);
  };
}
