import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgRole } from '../../schemas/identity/principal.js';
import { iso } from './rows.js';

/**
 * An org's single sign-on settings (migration 0053, decision 0083). The client secret stays sealed here; only the
 * sign-in opens it. Domains are stored lower-cased; several orgs may claim one, and only the org that proved it by
 * DNS (migration 0058, decision 0091) holds it verified and has its sign-ins.
 */
export type SsoDomainStatus = 'pending' | 'verified' | 'taken';

export interface SsoDomainClaim {
  readonly domain: string;
  /** pending until proven; taken while another org holds it verified (this claim can then never be verified). */
  readonly status: SsoDomainStatus;
  readonly verificationToken: string;
  readonly verifiedAt: string | null;
}

export interface OrgSso {
  readonly orgId: string;
  readonly issuer: string;
  readonly clientId: string;
  readonly sealedClientSecret: string;
  /** Every domain the org claimed, verified or not, sorted. */
  readonly emailDomains: readonly string[];
  readonly domains: readonly SsoDomainClaim[];
  /** The claimed domains the org proved it holds: only these route sign-ins and take `enforce`. */
  readonly verifiedDomains: readonly string[];
  readonly groupsClaim: string;
  readonly roleMap: Readonly<Record<string, OrgRole>>;
  /** The role of a person no group maps; null refuses them. */
  readonly defaultRole: OrgRole | null;
  readonly enforce: boolean;
  readonly updatedBy: string;
  readonly updatedAt: string;
}

export type OrgSsoInput = Omit<OrgSso, 'updatedAt' | 'domains' | 'verifiedDomains'> & { readonly at: Date };

interface ClaimRow { domain: string; verification_token: string; verified_at: Date | string | null; taken: boolean }

interface Row {
  org_id: string; issuer: string; client_id: string; sealed_client_secret: string; groups_claim: string; role_map: unknown;
  default_role: string | null; enforce: boolean; updated_by: string; updated_at: Date;
}

const parsed = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

function toSso(row: Row, claims: readonly ClaimRow[]): OrgSso {
  const domains = claims.map((c): SsoDomainClaim => ({
    domain: c.domain, status: c.verified_at !== null ? 'verified' : c.taken ? 'taken' : 'pending',
    verificationToken: c.verification_token, verifiedAt: c.verified_at === null ? null : iso(c.verified_at),
  })).sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
  return {
    orgId: row.org_id, issuer: row.issuer, clientId: row.client_id, sealedClientSecret: row.sealed_client_secret,
    emailDomains: domains.map((d) => d.domain), domains, verifiedDomains: domains.filter((d) => d.status === 'verified').map((d) => d.domain),
    groupsClaim: row.groups_claim, roleMap: parsed(row.role_map) as Record<string, OrgRole>,
    defaultRole: (row.default_role as OrgRole | null) ?? null, enforce: Boolean(row.enforce), updatedBy: row.updated_by,
    updatedAt: iso(row.updated_at),
  };
}

export async function readOrgSso(db: Knex, orgId: string): Promise<OrgSso | undefined> {
  const row = await db('org_sso').where({ org_id: orgId }).first<Row | undefined>();
  if (!row) return undefined;
  const claims = await db('org_sso_domains as d').where('d.org_id', orgId).select(
    'd.domain', 'd.verification_token', 'd.verified_at',
    db.raw('exists (select 1 from org_sso_domains o where o.domain = d.domain and o.org_id <> d.org_id and o.verified_at is not null) as taken'),
  ) as ClaimRow[];
  return toSso(row, claims.map((c) => ({ ...c, taken: c.taken === true || String(c.taken) === 'true' })));
}

/** The org whose sign-in an email domain goes to, with its settings; undefined when no org has verified the domain. */
export async function ssoForDomain(db: Knex, domain: string): Promise<OrgSso | undefined> {
  const claimed = await db('org_sso_domains').where({ domain: domain.toLowerCase() }).whereNotNull('verified_at').first<{ org_id: string } | undefined>('org_id');
  return claimed ? readOrgSso(db, claimed.org_id) : undefined;
}

/**
 * Stores the org's settings and its domains, replacing what it had, inside the caller's transaction (which also
 * records the audit entry). A domain the org keeps keeps its token and whether it is verified; a new one is pending
 * with a fresh token. A domain another org holds verified is a 409 naming it; another org's pending claim is no bar
 * (it proved nothing), and whoever verifies first holds the domain.
 */
export async function putOrgSso(trx: Knex.Transaction, input: OrgSsoInput): Promise<{ created: boolean }> {
  const taken = await trx('org_sso_domains').whereIn('domain', [...input.emailDomains]).whereNot({ org_id: input.orgId })
    .whereNotNull('verified_at').first<{ domain: string } | undefined>('domain');
  if (taken) throw domainTaken(taken.domain);
  const existing = await trx('org_sso').where({ org_id: input.orgId }).first<{ org_id: string } | undefined>('org_id');
  const values = {
    issuer: input.issuer, client_id: input.clientId, sealed_client_secret: input.sealedClientSecret, groups_claim: input.groupsClaim,
    role_map: JSON.stringify(input.roleMap), default_role: input.defaultRole, enforce: input.enforce, updated_by: input.updatedBy, updated_at: input.at,
  };
  if (existing) await trx('org_sso').where({ org_id: input.orgId }).update(values);
  else await trx('org_sso').insert({ org_id: input.orgId, ...values, created_at: input.at });
  await trx('org_sso_domains').where({ org_id: input.orgId }).whereNotIn('domain', [...input.emailDomains]).delete();
  await trx('org_sso_domains')
    .insert(input.emailDomains.map((domain) => ({ domain, org_id: input.orgId, verification_token: newVerificationToken(), claimed_at: input.at })))
    .onConflict(['org_id', 'domain']).ignore();
  return { created: !existing };
}

const domainTaken = (domain: string) =>
  new TroupeError('CONFLICT', `emailDomains: ${domain} is verified by another org and signs in at its provider`, { field: 'emailDomains', domain });

/** 128 random bits: what the org publishes in DNS to prove a claim (decision 0091). */
const newVerificationToken = (): string => randomBytes(16).toString('base64url');

/** Removes the org's settings and domains (its sign-ins under way go with them); false when there were none. */
export async function deleteOrgSso(trx: Knex.Transaction, orgId: string): Promise<boolean> {
  await trx('oidc_login_states').where({ org_id: orgId }).delete();
  await trx('org_sso_domains').where({ org_id: orgId }).delete();
  // Counted by the rows returned: PGlite's driver does not answer a delete with its row count.
  const deleted = await trx('org_sso').where({ org_id: orgId }).delete().returning('org_id') as unknown[];
  return deleted.length > 0;
}
