import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import { isUniqueViolation } from './orgs.js';

/**
 * Proving a single sign-on domain claim (migration 0058, decision 0091). A claim is verified once its org showed the
 * DNS record; the partial unique index on verified domains makes the first org to verify the only holder, also when
 * two orgs verify at the same moment.
 */
export interface DomainClaim {
  readonly verificationToken: string;
  readonly verified: boolean;
  /** Another org holds the domain verified: this claim can no longer be verified. */
  readonly takenBy: string | undefined;
}

export async function readDomainClaim(db: Knex, orgId: string, domain: string): Promise<DomainClaim | undefined> {
  const row = await db('org_sso_domains').where({ org_id: orgId, domain })
    .first<{ verification_token: string; verified_at: Date | null } | undefined>('verification_token', 'verified_at');
  if (!row) return undefined;
  const holder = await db('org_sso_domains').where({ domain }).whereNot({ org_id: orgId }).whereNotNull('verified_at')
    .first<{ org_id: string } | undefined>('org_id');
  return { verificationToken: row.verification_token, verified: row.verified_at !== null, takenBy: holder?.org_id };
}

/**
 * Marks the org's claim verified inside the caller's transaction (which records the audit entry). False when the
 * claim is gone or was already verified; a domain another org verified first is a 409.
 */
export async function markDomainVerified(trx: Knex.Transaction, orgId: string, domain: string, token: string, at: Date): Promise<boolean> {
  try {
    // The token is matched too: a claim removed and made again while the lookup ran has a new one, not yet proven.
    const updated = await trx('org_sso_domains').where({ org_id: orgId, domain, verification_token: token }).whereNull('verified_at')
      .update({ verified_at: at }).returning('domain') as unknown[];
    return updated.length > 0;
  } catch (err) {
    if (isUniqueViolation(err)) throw verifiedElsewhere(domain);
    throw err;
  }
}

export const verifiedElsewhere = (domain: string) =>
  new TroupeError('CONFLICT', `${domain} is already verified by another org; it signs in at that org's provider`, { domain });
