import type { Knex } from 'knex';
import { appendAudit, type AuditInput } from '../audit-log.js';
import { isoOrNull } from '../identity/rows.js';
import type { OAuthConnectionStatus } from './oauth.js';

/**
 * An org's OAuth connections as its integrations page lists them (issue 37 §2), and their removal. Never the sealed
 * tokens: what a person needs is whether the connection works, its scope, and who made it when.
 */
export interface OAuthConnectionListing {
  readonly provider: string;
  readonly status: OAuthConnectionStatus;
  readonly scope: string | null;
  readonly connectedBy: string;
  readonly connectedAt: string;
  readonly expiresAt: string | null;
}

export async function listOAuthConnections(db: Knex, orgId: string): Promise<OAuthConnectionListing[]> {
  const rows = await db('integration_oauth_connections').where({ org_id: orgId }).orderBy('provider')
    .select('provider', 'status', 'scope', 'connected_by', 'updated_at', 'expires_at');
  return rows.map((r: Record<string, unknown>) => ({
    provider: String(r.provider), status: r.status as OAuthConnectionStatus, scope: r.scope === null ? null : String(r.scope),
    connectedBy: String(r.connected_by), connectedAt: isoOrNull(r.updated_at) ?? '', expiresAt: isoOrNull(r.expires_at),
  }));
}

/** Forgets the org's tokens for the provider, with `audit` in the same transaction; false when none were stored. */
export async function deleteOAuthConnection(db: Knex, orgId: string, provider: string, audit: AuditInput): Promise<boolean> {
  return db.transaction(async (trx) => {
    // `returning` rather than the affected-row count, which PGlite's dialect does not report.
    const deleted = await trx('integration_oauth_connections').where({ org_id: orgId, provider }).delete().returning('provider');
    if (deleted.length === 0) return false;
    await appendAudit(trx, audit);
    return true;
  });
}

/** The webhook providers the org stored a signing secret for, with when it last changed. */
export async function listWebhookIntegrations(db: Knex, orgId: string): Promise<Array<{ provider: string; projectId: string | null; updatedAt: string }>> {
  const rows = await db('provider_integrations').where({ org_id: orgId }).orderBy('provider').select('provider', 'project_id', 'updated_at');
  return rows.map((r: Record<string, unknown>) => ({
    provider: String(r.provider), projectId: r.project_id === null ? null : String(r.project_id), updatedAt: isoOrNull(r.updated_at) ?? '',
  }));
}
