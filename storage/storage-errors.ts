import { TroupeError } from '../ops/kernel/errors.js';

/**
 * Classifies what a database driver throws. A lost or refused connection becomes
 * `TroupeError('STORAGE_UNAVAILABLE')` (retryable, 503) so no raw driver error crosses the storage boundary for a
 * failure the caller can only wait out. Everything else is rethrown unchanged: constraint violations and our own
 * TroupeErrors mean something to the code that called us.
 */

/** Node socket errors seen when Postgres is down, restarting or unreachable. */
const socketErrorCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

/**
 * SQLSTATEs that mean "this connection or server cannot serve you now": class 08 (connection exception),
 * 57P01–57P05 (admin/crash shutdown, cannot connect now, idle-session timeout), 53300 (too many connections).
 */
function isUnavailableSqlState(code: string): boolean {
  return code.startsWith('08') || /^57P0[1-5]$/.test(code) || code === '53300';
}

/** Driver messages that carry no code: pg's dropped-socket errors, knex's pool timeout, PGlite after close. */
const unavailableMessages = [
  /Connection terminated/i,
  /Client has encountered a connection error/i,
  /Connection ended unexpectedly/i,
  /timeout exceeded when trying to connect/i,
  // pg's own connection timeout (a server that accepts the socket and never answers: frozen, or its backlog full).
  /^timeout expired$/,
  /Knex: Timeout acquiring a connection/i,
  /PGlite is closed/i,
  /Unable to acquire a connection/i,
];

export function isStorageUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'KnexTimeoutError') return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (socketErrorCodes.has(code) || isUnavailableSqlState(code))) return true;
  // pg wraps socket errors in AggregateError when every resolved address refused.
  if (err instanceof AggregateError && err.errors.some(isStorageUnavailable)) return true;
  return unavailableMessages.some((pattern) => pattern.test(err.message));
}

/** SQLSTATEs for text Postgres cannot store (a NUL character, a byte sequence invalid in UTF-8). */
function isUnstorableText(err: unknown): boolean {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  return code === '22P05' || code === '22021';
}

export function toStorageError(err: unknown): unknown {
  if (err instanceof TroupeError) return err;
  if (isStorageUnavailable(err)) {
    return new TroupeError('STORAGE_UNAVAILABLE', undefined, { cause: (err as Error).message });
  }
  if (isUnstorableText(err)) {
    return new TroupeError('VALIDATION_FAILED', 'value contains text that cannot be stored (NUL or invalid UTF-8)');
  }
  return err;
}

/** Runs a storage operation, translating driver failures at the boundary. */
export async function withStorageErrors<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (err) {
    throw toStorageError(err);
  }
}
