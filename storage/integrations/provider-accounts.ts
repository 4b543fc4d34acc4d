import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { ProviderIntegration } from './provider-integration-record.js';

/**
 * The provider account ids each org registered with an integration (migration 0046, decision 0070): how a delivery
 * without `?org=` finds the few orgs whose secrets may have signed it.
 */

/**
 * How many orgs may claim one account id of one provider. It bounds the signature work of a delivery routed by
 * account (one secret open and one HMAC per claimant), whoever registers the id.
 */
export const MAX_ORGS_PER_ACCOUNT = 5;

/** Ids are compared case-insensitively (a GitHub login is), so they are kept lower-cased. */
export const normaliseAccountId = (id: string): string => id.toLowerCase();

export async function accountIdsOf(db: Knex, orgId: string, provider: string): Promise<string[]> {
  const rows = await db('provider_integration_accounts').where({ org_id: orgId, provider }).orderBy('account_id').select<{ account_id: string }[]>('account_id');
  return rows.map((r) => r.account_id);
}

/**
 * Makes `accountIds` the org's ids for the provider, inside the caller's transaction (the integration row exists).
 * An id already claimed by MAX_ORGS_PER_ACCOUNT other orgs is refused (409), naming none of them. Each id is
 * counted under its own advisory lock, taken in a fixed order, so two orgs claiming at once cannot both be the
 * one too many, and cannot deadlock.
 */
export async function replaceAccountIds(trx: Knex.Transaction, orgId: string, provider: string, accountIds: readonly string[], at: Date): Promise<void> {
  const ids = [...new Set(accountIds.map(normaliseAccountId))].sort();
  const current = new Set(await accountIdsOf(trx, orgId, provider));
  for (const id of ids.filter((i) => !current.has(i))) {
    await trx.raw("select pg_advisory_xact_lock(hashtext('troupe.provider_account'), hashtext(?))", [`${provider}:${id}`]);
    const [claims] = await trx('provider_integration_accounts')
      .where({ provider, account_id: id }).whereNot({ org_id: orgId }).count<{ n: number | string }[]>({ n: '*' });
    if (Number(claims?.n ?? 0) >= MAX_ORGS_PER_ACCOUNT) {
      throw new TroupeError('CONFLICT', `account id ${id} is already registered by ${MAX_ORGS_PER_ACCOUNT} orgs, the most one id may have; deliver to this org's webhookUrl (with ?org=) instead`, { field: 'accountIds' });
    }
  }
  await trx('provider_integration_accounts').where({ org_id: orgId, provider }).whereNotIn('account_id', ids).delete();
  const added = ids.filter((i) => !current.has(i));
  if (added.length > 0) {
    await trx('provider_integration_accounts').insert(added.map((id) => ({ org_id: orgId, provider, account_id: id, created_at: at })));
  }
}

/**
 * The integrations that registered any of `candidates` (in the provider's order of preference, most specific
 * first), the earliest claim first within one id, at most MAX_ORGS_PER_ACCOUNT orgs in all: a delivery costs at most
 * that many signature checks, however many ids it names.
 */
export async function integrationsClaiming(db: Knex, provider: string, candidates: readonly string[]): Promise<ProviderIntegration[]> {
  const ids = [...new Set(candidates.map(normaliseAccountId))];
  if (ids.length === 0) return [];
  const rows = await db('provider_integration_accounts as a')
    .join('provider_integrations as i', function () { this.on('i.org_id', 'a.org_id').andOn('i.provider', 'a.provider'); })
    .where('a.provider', provider).whereIn('a.account_id', ids)
    .orderBy([{ column: 'a.created_at' }, { column: 'a.org_id' }])
    .limit(MAX_ORGS_PER_ACCOUNT * ids.length)
    .select<{ account_id: string; org_id: string; sealed_secret: string; project_id: string | null }[]>('a.account_id', 'i.org_id', 'i.sealed_secret', 'i.project_id');
  const byPreference = rows.sort((x, y) => ids.indexOf(x.account_id) - ids.indexOf(y.account_id));
  const found = new Map<string, ProviderIntegration>();
  for (const r of byPreference) {
    if (found.size === MAX_ORGS_PER_ACCOUNT) break;
    if (!found.has(r.org_id)) found.set(r.org_id, { orgId: r.org_id, provider, sealedSecret: r.sealed_secret, projectId: r.project_id });
  }
  return [...found.values()];
}
