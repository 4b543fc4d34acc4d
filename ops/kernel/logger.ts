import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON logs with the node id on every line; credentials are redacted wherever they appear in a logged object. */
export function createLogger(opts: { level: string; nodeId: string }): Logger {
  return pino({
    level: opts.level,
    base: { node: opts.nodeId },
    redact: {
      paths: [
        'authorization', '*.authorization', 'headers.authorization', 'headers.cookie', '*.password', 'password',
        '*.fullKey', '*.userToken', '*.runtimeJwt', '*.registrationToken', '*.clientSecret', '*.masterKey',
      ],
      censor: '[redacted]',
    },
  });
}

/** A logger that writes nothing, for tests and tools that do not want output. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
