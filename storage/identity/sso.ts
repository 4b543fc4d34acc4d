import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgRole } from '../../schemas/identity/principal.js';
import { isUniqueViolation } from './orgs.js';
import { iso } from './rows.js';

/**
 * An org's single sign-on settings (migration 0053, decision 0083). The client secret stays sealed here; only the
 * sign-in opens it. Domains are stored lower-cased, one org per domain.
 */
export interface OrgSso {
  readonly orgId: string;
  readonly issuer: string;
  readonly clientId: string;
  readonly sealedClientSecret: string;
  readonly emailDomains: readonly string[];
  readonly groupsClaim: string;
  readonly roleMap: Readonly<Record<string, OrgRole>>;
  /** The role of a person no group maps; null refuses them. */
  readonly defaultRole: OrgRole | null;
  readonly enforce: boolean;
  readonly updatedBy: string;
  readonly updatedAt: string;
}

export type OrgSsoInput = Omit<OrgSso, 'updatedAt'> & { readonly at: Date };

interface Row {
  org_id: string; issuer: string; client_id: string; sealed_client_secret: string; groups_claim: string; role_map: unknown;
  default_role: string | null; enforce: boolean; updated_by: string; updated_at: Date;
}

const parsed = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

function toSso(row: Row, domains: readonly string[]): OrgSso {
  return {
    orgId: row.org_id, issuer: row.issuer, clientId: row.client_id, sealedClientSecret: row.sealed_client_secret,
    emailDomains: [...domains].sort(), groupsClaim: row.groups_claim, roleMap: parsed(row.role_map) as Record<string, OrgRole>,
    defaultRole: (row.default_role as OrgRole | null) ?? null, enforce: Boolean(row.enforce), updatedBy: row.updated_by,
    updatedAt: iso(row.updated_at),
  };
}

export async function readOrgSso(db: Knex, orgId: string): Promise<OrgSso | undefined> {
  const row = await db('org_sso').where({ org_id: orgId }).first<Row | undefined>();
  if (!row) return undefined;
  const domains = await db('org_sso_domains').where({ org_id: orgId }).pluck('domain') as string[];
  return toSso(row, domains);
}

/** The org whose sign-in an email domain goes to, with its settings; undefined when no org claimed the domain. */
export async function ssoForDomain(db: Knex, domain: string): Promise<OrgSso | undefined> {
  const claimed = await db('org_sso_domains').where({ domain: domain.toLowerCase() }).first<{ org_id: string } | undefined>('org_id');
  return claimed ? readOrgSso(db, claimed.org_id) : undefined;
}

/**
 * Stores the org's settings and its domains, replacing what it had, inside the caller's transaction (which also
 * records the audit entry). A domain another org holds is a 409 naming it, checked first and again by the key
 * when two orgs race for one domain.
 */
export async function putOrgSso(trx: Knex.Transaction, input: OrgSsoInput): Promise<{ created: boolean }> {
  const taken = await trx('org_sso_domains').whereIn('domain', [...input.emailDomains]).whereNot({ org_id: input.orgId }).first<{ domain: string } | undefined>('domain');
  if (taken) throw domainTaken(taken.domain);
  const existing = await trx('org_sso').where({ org_id: input.orgId }).first<{ org_id: string } | undefined>('org_id');
  const values = {
    issuer: input.issuer, client_id: input.clientId, sealed_client_secret: input.sealedClientSecret, groups_claim: input.groupsClaim,
    role_map: JSON.stringify(input.roleMap), default_role: input.defaultRole, enforce: input.enforce, updated_by: input.updatedBy, updated_at: input.at,
  };
  if (existing) await trx('org_sso').where({ org_id: input.orgId }).update(values);
  else await trx('org_sso').insert({ org_id: input.orgId, ...values, created_at: input.at });
  await trx('org_sso_domains').where({ org_id: input.orgId }).delete();
  try {
    await trx('org_sso_domains').insert(input.emailDomains.map((domain) => ({ domain, org_id: input.orgId })));
  } catch (err) {
    if (isUniqueViolation(err)) throw domainTaken(input.emailDomains.join(', '));
    throw err;
  }
  return { created: !existing };
}

const domainTaken = (domain: string) =>
  new TroupeError('CONFLICT', `emailDomains: ${domain} already signs in at another org's provider`, { field: 'emailDomains' });

/** Removes the org's settings and domains (its sign-ins under way go with them); false when there were none. */
export async function deleteOrgSso(trx: Knex.Transaction, orgId: string): Promise<boolean> {
  await trx('oidc_login_states').where({ org_id: orgId }).delete();
  await trx('org_sso_domains').where({ org_id: orgId }).delete();
  // Counted by the rows returned: PGlite's driver does not answer a delete with its row count.
  const deleted = await trx('org_sso').where({ org_id: orgId }).delete().returning('org_id') as unknown[];
  return deleted.length > 0;
}
