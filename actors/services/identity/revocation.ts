import type { Transport } from '../../../transport/port.js';
import type { Principal } from './principal.js';

/**
 * Revocation fan-out. Whoever ends a credential's validity (the org actor revoking a key, a route changing a
 * membership, the daemon room revoking a worker) publishes the tags it ends on `identity.revoked`; every node's
 * authenticator drops memoised principals carrying any of them. The database stays the source of truth: a node
 * that misses the event re-reads within the memo TTL.
 *
 * Tags: `apiKey:<keyId>`, `member:<orgId>:<userId>`, `user:<userId>`, `worker:<workerId>`,
 * `registration:<registrationId>`, `machineClient:<clientId>`, `userToken:<tokenId>` (one login session, ended by
 * logout), `org:<orgId>` (everything of one org).
 */
export const REVOCATION_TOPIC = 'identity.revoked';

export interface RevocationEvent {
  readonly tags: readonly string[];
}

export const tags = {
  apiKey: (keyId: string) => `apiKey:${keyId}`,
  member: (orgId: string, userId: string) => `member:${orgId}:${userId}`,
  user: (userId: string) => `user:${userId}`,
  worker: (workerId: string) => `worker:${workerId}`,
  registration: (registrationId: string) => `registration:${registrationId}`,
  machineClient: (clientId: string) => `machineClient:${clientId}`,
  userToken: (tokenId: string) => `userToken:${tokenId}`,
  org: (orgId: string) => `org:${orgId}`,
} as const;

/** The tags whose revocation ends a memoised principal. */
export function revocationTags(p: Principal): string[] {
  switch (p.kind) {
    case 'user': return [tags.member(p.orgId, p.userId), tags.user(p.userId), tags.org(p.orgId)];
    case 'apiKey': return [tags.apiKey(p.keyId), tags.org(p.orgId)];
    case 'runtime': return [tags.worker(p.workerId), tags.registration(p.registrationId), tags.org(p.orgId)];
    case 'machine': return [tags.machineClient(p.clientId), tags.org(p.orgId)];
    case 'admin': return [];
  }
}

const MAX_TAGS = 1000;

export function parseRevocation(event: unknown): string[] | undefined {
  if (typeof event !== 'object' || event === null) return undefined;
  const list = (event as { tags?: unknown }).tags;
  if (!Array.isArray(list) || list.length > MAX_TAGS) return undefined;
  if (!list.every((t) => typeof t === 'string' && t.length > 0 && t.length <= 300)) return undefined;
  return list as string[];
}

export async function publishRevocation(transport: Pick<Transport, 'publish'>, revoked: readonly string[]): Promise<void> {
  if (revoked.length === 0) return;
  const event: RevocationEvent = { tags: [...revoked] };
  await transport.publish(REVOCATION_TOPIC, event);
}
