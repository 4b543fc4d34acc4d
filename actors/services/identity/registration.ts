import type { Knex } from 'knex';
import { registrationTokensByPrefix } from '../../../storage/identity/credentials.js';
import { hashesEqual, parseSecret, registrationTokenPrefix } from './secrets-format.js';

/**
 * Checks a daemon registration token (`trg_…`, presented in the registration body, spec 5.2). Undefined for
 * anything malformed, unknown or revoked; the caller answers 401 without saying which. The org and the projects
 * the worker may serve come from the token's row, never from the request.
 */
export interface VerifiedRegistration {
  readonly registrationId: string;
  readonly orgId: string;
  /** Empty: every project of the org. */
  readonly projects: readonly string[];
}

export async function verifyRegistrationToken(db: Knex, presented: string): Promise<VerifiedRegistration | undefined> {
  const parsed = parseSecret(registrationTokenPrefix, presented);
  if (!parsed) return undefined;
  let found: Awaited<ReturnType<typeof registrationTokensByPrefix>>[number] | undefined;
  for (const row of await registrationTokensByPrefix(db, parsed.lookupPrefix)) if (hashesEqual(row.hash, parsed.hash)) found = row;
  if (!found || found.revokedAt !== null) return undefined;
  return { registrationId: found.id, orgId: found.orgId, projects: found.projects };
}
