import { publishRevocation } from '../../actors/services/identity/revocation.js';
import type { Deps } from '../../actors/services/deps.js';

/**
 * After a revocation is stored: this node refuses the credential before the route answers, and the other nodes
 * drop it when they hear `identity.revoked`. A failed publish is only logged: storage already holds the
 * revocation, and a node that missed the event re-reads it within its memo TTL.
 */
export async function announceRevocation(deps: Deps, revoked: string[]): Promise<void> {
  deps.auth.invalidate?.(revoked);
  deps.authz.invalidate?.(revoked);
  try {
    await publishRevocation(deps.transport, revoked);
  } catch (err) {
    deps.log.warn({ err, revoked }, 'could not publish a revocation');
  }
}
