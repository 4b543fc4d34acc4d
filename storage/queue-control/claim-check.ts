import { TroupeError } from '../../ops/kernel/errors.js';
import type { SqlTx } from '../sql-tx.js';
import { HOLDING_STATUSES } from './concurrency.js';

/**
 * The concurrency limit checked where a claim is written (decision 0085), closing the race decision 0081 left: two
 * workers polling at once may each be offered a different session of a key with one place left, and both claim. The
 * claim's own transaction, after its row is written, takes a transaction-scoped advisory lock on the org's key and
 * counts the holders, its own claim included: the second of two racing claims waits for the first to commit, sees it,
 * and is refused with 409 `CONCURRENCY_LIMIT`, which rolls the whole transition back (the session stays pending and
 * the worker moves on). A project with no setting costs one primary-key probe, and a session with no key nothing.
 */
export async function checkKeyRoomAtClaim(tx: SqlTx, orgId: string, projectId: string, key: string): Promise<void> {
  const setting = await tx.query<{ default_limit: number }>(
    // The lock only where a limit applies: keyed sessions of projects without a setting never wait for each other.
    `select pc.default_limit, pg_advisory_xact_lock(hashtextextended($2, 36)) from project_concurrency pc where pc.project_id = $1`,
    [projectId, `${orgId}:${key}`],
  );
  const limit = setting.rows[0]?.default_limit;
  if (limit === undefined) return;
  // A statement of its own, after the lock: under read committed it sees every claim committed before the lock was ours.
  const held = await tx.query<{ n: number }>(
    `select count(*)::int as n from sessions where org_id = $1 and concurrency_key = $2 and status in (${HOLDING_STATUSES.map((s) => `'${s}'`).join(', ')})`,
    [orgId, key],
  );
  const n = Number(held.rows[0]?.n ?? 0);
  if (n > Number(limit)) {
    throw new TroupeError('CONCURRENCY_LIMIT', `the concurrency key already has ${Number(limit)} session${Number(limit) === 1 ? '' : 's'} holding a claim`, { concurrencyKey: key, limit: Number(limit) });
  }
}
