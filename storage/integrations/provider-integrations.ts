import type { Knex } from 'knex';
import { appendAudit, type AuditInput } from '../audit-log.js';
import { replaceAccountIds } from './provider-accounts.js';
import type { ProviderIntegration } from './provider-integration-record.js';

export type { ProviderIntegration } from './provider-integration-record.js';

interface Row { org_id: string; provider: string; sealed_secret: string; project_id: string | null }

const toIntegration = (r: Row): ProviderIntegration =>
  ({ orgId: r.org_id, provider: r.provider, sealedSecret: r.sealed_secret, projectId: r.project_id });

export async function upsertProviderIntegration(
  db: Knex, input: { orgId: string; provider: string; sealedSecret: string; projectId: string | null; updatedBy: string; at: Date },
): Promise<{ created: boolean }> {
  const rows = await db('provider_integrations')
    .insert({
      org_id: input.orgId, provider: input.provider, sealed_secret: input.sealedSecret, project_id: input.projectId,
      updated_by: input.updatedBy, created_at: input.at, updated_at: input.at,
    })
    .onConflict(['org_id', 'provider'])
    .merge({ sealed_secret: input.sealedSecret, project_id: input.projectId, updated_by: input.updatedBy, updated_at: input.at })
    .returning(['created_at', 'updated_at']) as Array<{ created_at: Date; updated_at: Date }>;
  const row = rows[0];
  return { created: row !== undefined && new Date(row.created_at).getTime() === new Date(row.updated_at).getTime() };
}

export async function findProviderIntegration(db: Knex, orgId: string, provider: string): Promise<ProviderIntegration | undefined> {
  const row = await db('provider_integrations').where({ org_id: orgId, provider }).first<Row | undefined>('org_id', 'provider', 'sealed_secret', 'project_id');
  return row ? toIntegration(row) : undefined;
}

/**
 * Stores an org's provider integration and appends `audit` to its chain, in one transaction; `accountIds`, when
 * given, replace the ids it is routed by (absent, they stay as they were).
 */
export async function connectProviderIntegration(
  db: Knex,
  input: { orgId: string; provider: string; sealedSecret: string; projectId: string | null; accountIds?: readonly string[]; updatedBy: string; at: Date },
  audit: AuditInput,
): Promise<void> {
  await db.transaction(async (trx) => {
    await upsertProviderIntegration(trx, input);
    if (input.accountIds !== undefined) await replaceAccountIds(trx, input.orgId, input.provider, input.accountIds, input.at);
    await appendAudit(trx, audit);
  });
}

/** When the org's connection was last changed, with what `findProviderIntegration` gives. */
export async function readProviderIntegration(db: Knex, orgId: string, provider: string): Promise<(ProviderIntegration & { updatedAt: Date }) | undefined> {
  const row = await db('provider_integrations').where({ org_id: orgId, provider })
    .first<(Row & { updated_at: Date }) | undefined>('org_id', 'provider', 'sealed_secret', 'project_id', 'updated_at');
  return row ? { ...toIntegration(row), updatedAt: new Date(row.updated_at) } : undefined;
}
