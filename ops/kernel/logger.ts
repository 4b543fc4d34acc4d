import { pino, type Logger, type LoggerOptions } from 'pino';
import { currentTrace } from './trace-context.js';

export type { Logger };

/** JSON logs with the node id on every line; credentials are redacted wherever they appear in a logged object. */
export function createLogger(opts: { level: string; nodeId: string }, destination?: NodeJS.WritableStream): Logger {
  const options: LoggerOptions = {
    level: opts.level,
    base: { node: opts.nodeId },
    // Every line written while serving a request, on the edge or on the node running its actor, names its trace.
    mixin: () => {
      const trace = currentTrace();
      return trace === undefined ? {} : trace.reqId === undefined ? { trace: trace.traceparent } : { trace: trace.traceparent, reqId: trace.reqId };
    },
    redact: {
      paths: [
        'authorization', '*.authorization', 'headers.authorization', 'headers.cookie', '*.password', 'password',
        '*.fullKey', '*.userToken', '*.runtimeJwt', '*.registrationToken', '*.clientSecret', '*.masterKey',
      ],
      censor: '[redacted]',
    },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

/** A logger that writes nothing, for tests and tools that do not want output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
const noop = (): void => undefined;
/** On a lazy logger: the made logger whose level it logs at (a child keeps its parent's level). */
const LEVEL_SOURCE = Symbol('lazyChild.levelSource');

/**
 * `parent.child(bindings)`, made only when something is logged at an enabled level. A pino child serialises its
 * bindings when made: one per actor and one per actor turn cost the session path about 2 % of its CPU (issue 19),
 * for lines that are almost never written. A disabled level answers a no-op without making the child.
 */
export function lazyChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  const levels = (parent as Logger & { [LEVEL_SOURCE]?: Logger })[LEVEL_SOURCE] ?? parent;
  let child: Logger | undefined;
  return new Proxy(parent, {
    get(_target, property) {
      if (property === LEVEL_SOURCE) return levels;
      if (child === undefined && typeof property === 'string') {
        if (property === 'isLevelEnabled') return (level: string) => levels.isLevelEnabled(level);
        if (property === 'level') return levels.level;
        if (LEVELS.has(property) && !levels.isLevelEnabled(property)) return noop;
      }
      const target = (child ??= parent.child(bindings));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
