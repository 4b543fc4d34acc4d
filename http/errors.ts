import { TroupeError } from '../ops/kernel/errors.js';
import { toStorageError } from '../storage/storage-errors.js';
import type { Logger } from '../ops/kernel/logger.js';
import { warnOncePerWindow } from '../ops/kernel/flood-log.js';

/** The body every error reply carries; `schemas/openapi.ts` documents the same shape. */
export interface ErrorBody {
  error: string;
  code: string;
  details?: Record<string, unknown>;
}

export interface ErrorReply {
  status: number;
  body: ErrorBody;
}

/**
 * Maps anything thrown while serving a request to the wire. Our own errors keep their status, message and details;
 * anything else is a bug, logged with its stack and answered as a bare INTERNAL, so nothing about our insides
 * (stack, SQL, file paths) ever reaches a client. INTERNAL is answered generically even when it is a TroupeError,
 * because its message may have come from another node or a library. Raw storage-driver errors are classified
 * first (see storage/storage-errors.ts).
 */
export function toErrorReply(thrown: unknown, log: Logger, context: Record<string, unknown> = {}): ErrorReply {
  // Read models query the database directly from handlers, so a driver error can reach this point untranslated:
  // a database that is down is a 503 and text Postgres cannot store (a NUL in a query value) is the client's 400.
  const err = toStorageError(thrown);
  if (err instanceof TroupeError && err.code !== 'INTERNAL') {
    if (err.status >= 500) warnOncePerWindow(log, `dependency:${err.code}`, { ...context, code: err.code, reason: err.message }, 'request failed on a dependency');
    const body: ErrorBody = { error: err.message, code: err.code };
    if (err.details !== undefined) body.details = err.details;
    return { status: err.status, body };
  }
  log.error({ ...context, err }, 'unhandled error while serving a request');
  return { status: 500, body: { error: 'internal error', code: 'INTERNAL' } };
}
