import { capText, escapeControls } from './log-text.js';

/**
 * The worker's log: one line per event on stderr. Readable by default (`2025-01-01T12:00:00.000Z INFO  session
 * 3f2a… started pid 4242`), or one JSON object per line with `--log-format json` ({time, level, event, msg, ...}).
 * Messages and fields carry what the server sent, so each line is made safe here, whatever the caller passed: no
 * control character is written as it is (log-text.ts), and long strings are cut, so one event is always one line
 * of bounded length.
 */
export type LogFormat = 'text' | 'json';
export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface WorkerLog {
  (level: Level, event: string, msg: string, fields?: Record<string, unknown>): void;
}

const MAX_MSG_CHARS = 4000;
const MAX_FIELD_CHARS = 1000;

/** A field's value for the JSON line: strings and nested values longer than the cap become a cut string. */
function boundedValue(value: unknown): unknown {
  if (typeof value === 'string') return capText(value, MAX_FIELD_CHARS);
  if (value === null || typeof value !== 'object') return value;
  const json = JSON.stringify(value);
  return json !== undefined && json.length > MAX_FIELD_CHARS ? capText(json, MAX_FIELD_CHARS) : value;
}

/** A field's value in a text line: bare when it is one word, else JSON; cut and escaped either way. */
function textValue(value: unknown): string {
  const text = typeof value === 'string' ? capText(value, MAX_FIELD_CHARS) : capText(JSON.stringify(value) ?? String(value), MAX_FIELD_CHARS);
  return escapeControls(typeof value === 'string' && /\s/.test(text) ? JSON.stringify(text) : text);
}

export function createLog(format: LogFormat, write: (line: string) => void = (l) => process.stderr.write(l), debug = false): WorkerLog {
  return (level, event, msg, fields = {}) => {
    if (level === 'debug' && !debug) return;
    const time = new Date().toISOString();
    const message = capText(msg, MAX_MSG_CHARS);
    if (format === 'json') {
      const bounded = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, boundedValue(v)]));
      // JSON.stringify escapes C0 but leaves DEL, C1 and U+2028/9 as they are; inside a JSON string an escape of
      // them reads back as the same character, and outside strings JSON.stringify writes none.
      write(`${escapeControls(JSON.stringify({ time, level, event, msg: message, ...bounded }))}\n`);
      return;
    }
    const extra = Object.entries(fields)
      .filter(([k, v]) => v !== undefined && k !== 'sessionId')
      .map(([k, v]) => `${k}=${textValue(v)}`);
    const session = typeof fields.sessionId === 'string' ? `session ${textValue(fields.sessionId)} ` : '';
    write(`${time} ${level.toUpperCase().padEnd(5)} ${session}${escapeControls(message)}${extra.length ? `  ${extra.join(' ')}` : ''}\n`);
  };
}
