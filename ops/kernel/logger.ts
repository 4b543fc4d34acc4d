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
