import { TroupeError } from '../ops/kernel/errors.js';

/**
 * Keyset paging over (created_at, id), newest first: a cursor is the position of the last row of the previous page,
 * opaque to clients. A cursor this server did not hand out is the client's mistake (400), never a database error.
 */
export function encodeCursor(createdAt: string, id: string): string {
  return Buffer.from(`${createdAt}|${id}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string, idPattern: RegExp): { createdAt: string; id: string } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(at ?? '');
  if (id === undefined || !idPattern.test(id) || Number.isNaN(createdAt.getTime())) {
    throw new TroupeError('HTTP_BAD_QUERY', 'cursor is not one this server handed out', { field: 'cursor' });
  }
  return { createdAt: createdAt.toISOString(), id };
}
