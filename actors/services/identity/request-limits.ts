import { TroupeError } from '../../../ops/kernel/errors.js';
import { WORKER_REQUEST_BYTES, type RateLimits } from '../../../storage/rate-limits.js';
import type { Principal } from './principal.js';

/**
 * Counts one request against the caller's per-credential limits (decision 0026): a user (by token or cookie alike),
 * an API key, a machine client. A dispatch counts against the dispatch limit and the write limit.
 *
 * A dispatch's two counts go to Redis together, one round trip instead of two in a row (decision 0057). A dispatch
 * refused by its own limit is not a write, as when the write was only counted after the dispatch passed: its write
 * is given back.
 */
export async function limitRequest(limits: RateLimits, kind: 'write' | 'dispatch', principal: Principal): Promise<void> {
  const key = credentialKey(principal);
  if (key === undefined) return;
  if (kind !== 'dispatch') return limits.writes.consume(key);
  const [dispatch, write] = await Promise.allSettled([limits.dispatches.consume(key), limits.writes.consume(key)]);
  if (dispatch.status === 'rejected') {
    if (isRateLimited(dispatch.reason)) await limits.writes.giveBack(key).catch(() => undefined);
    throw dispatch.reason;
  }
  if (write.status === 'rejected') throw write.reason;
}

const isRateLimited = (err: unknown): boolean => err instanceof TroupeError && err.code === 'RATE_LIMITED';

function credentialKey(p: Principal): string | undefined {
  switch (p.kind) {
    case 'user': return `user:${p.userId}`;
    case 'apiKey': return `key:${p.keyId}`;
    case 'machine': return `machine:${p.clientId}`;
    default: return undefined;
  }
}

/**
 * Counts a worker's request of agent output (the output route and interview deltas), `bodyBytes` as received, against
 * its byte budget per minute: runtime tokens skip the per-credential request limits, and without this one a worker
 * could make a node parse, hold and fan out gigabytes (issue 30).
 */
export async function limitWorkerOutput(limits: RateLimits, workerId: string, bodyBytes: number): Promise<void> {
  await limits.workerOutputBytes.consume(`worker:${workerId}`, WORKER_REQUEST_BYTES + bodyBytes);
}

/**
 * Counts `runs` triggered starts (schedule fires, webhook-triggered runs) against the org's budget, and says why they
 * may not start when it is used up (undefined when they may).
 */
export async function triggerBudgetRefusal(limits: RateLimits, orgId: string, runs: number): Promise<string | undefined> {
  try {
    await limits.triggeredStarts.consume(`org:${orgId}`, runs);
    return undefined;
  } catch (err) {
    if (err instanceof TroupeError && err.code === 'RATE_LIMITED') return err.message;
    throw err;
  }
}
