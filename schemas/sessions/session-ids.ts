import { createHash, randomUUID } from 'node:crypto';

/**
 * A session has two names (decision 0068):
 * - its public id, what every answer shows and every route takes: the first 16 hex characters of SHA-256 over the
 *   tracker's session identifier, exactly as spec 2.7 says, so a client computes it from the tracker id alone. Two
 *   orgs using one tracker id hold sessions with the same public id; every lookup is by (org, public id).
 * - its key, the name inside the node (actor address, read-model rows, ledger keys, topics): SHA-256 over
 *   `<orgId>:<trackerSessionId>`, so no key is shared by two orgs and nothing inside needs the org beside it. Sessions
 *   made before public ids were shown by the spec's rule showed their key; that key stays a name of theirs in their org.
 */
const hex16 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);

export const publicSessionId = (trackerSessionId: string): string => hex16(trackerSessionId);

export const sessionKey = (orgId: string, trackerSessionId: string): string => hex16(`${orgId}:${trackerSessionId}`);

/** What a public id (or an older session's key) looks like; anything else is not found without a read. */
export const publicIdPattern = /^[0-9a-f]{16}$/;

/**
 * The tracker id of a session dispatched without one: a fresh UUID, so its actor's address has never been written and
 * the first dispatch need not read it (`neverWritten`, decision 0055). A caller may send an id of this form itself;
 * a wrong guess costs one more round trip, not a state.
 */
export const newTrackerSessionId = (): string => `troupe:${randomUUID()}`;
export const isNewTrackerSessionId = (id: string): boolean => /^troupe:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id);
