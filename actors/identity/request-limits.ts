import type { RateLimits } from '../../storage/rate-limits.js';
import type { Principal } from './principal.js';

/**
 * Counts one request against the caller's per-credential limits (decision 0026): a user (by token or cookie alike),
 * an API key, a machine client. A dispatch counts against the dispatch limit and the write limit.
 */
export async function limitRequest(limits: RateLimits, kind: 'write' | 'dispatch', principal: Principal): Promise<void> {
  const key = credentialKey(principal);
  if (key === undefined) return;
  if (kind === 'dispatch') await limits.dispatches.consume(key);
  await limits.writes.consume(key);
}

function credentialKey(p: Principal): string | undefined {
  switch (p.kind) {
    case 'user': return `user:${p.userId}`;
    case 'apiKey': return `key:${p.keyId}`;
    case 'machine': return `machine:${p.clientId}`;
    default: return undefined;
  }
}
