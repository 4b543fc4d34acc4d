import type { Knex } from 'knex';

/**
 * The queries behind `GET /api/security/metrics` (actors/services/governance/security-metrics.ts says what each figure
 * means). All are scoped by org and by a time window; all read existing tables: `audit_log` (the org's hash
 * chain), `incidents`, `policies`, `incident_io_connections`, and `users` for actor names.
 */

export async function auditCountsByType(db: Knex, orgId: string, sinceMs: number): Promise<Record<string, number>> {
  const rows = await db('audit_log').select('type').count({ n: '*' })
    .where({ org_id: orgId }).andWhere('created_at', '>=', new Date(sinceMs)).groupBy('type');
  return Object.fromEntries((rows as Array<{ type: string; n: string | number }>).map((r) => [r.type, Number(r.n)]));
}

export async function distinctAuditActors(db: Knex, orgId: string, sinceMs: number): Promise<number> {
  const row = await db('audit_log').countDistinct({ n: 'actor' }).where({ org_id: orgId }).andWhere('created_at', '>=', new Date(sinceMs)).first();
  return Number((row as { n?: unknown } | undefined)?.n ?? 0);
}

export interface TimelineRow {
  readonly seq: number;
  readonly at: string;
  readonly type: string;
  readonly actor: string;
  readonly subject: string | null;
}

/** Newest first, at most `limit` entries of the window. */
export async function auditTimeline(db: Knex, orgId: string, sinceMs: number, limit: number): Promise<TimelineRow[]> {
  const rows = await db('audit_log').select('seq', 'created_at', 'type', 'actor', 'subject')
    .where({ org_id: orgId }).andWhere('created_at', '>=', new Date(sinceMs)).orderBy('seq', 'desc').limit(limit);
  return rows.map((r: Record<string, unknown>) => ({
    seq: Number(r.seq), at: (r.created_at instanceof Date ? r.created_at : new Date(String(r.created_at))).toISOString(),
    type: String(r.type), actor: String(r.actor), subject: r.subject === null || r.subject === undefined ? null : String(r.subject),
  }));
}

export interface IncidentFigures {
  readonly open: number;
  readonly openBySeverity: Record<string, number>;
  readonly createdInWindow: number;
  readonly resolvedInWindow: number;
  /** Mean time from creation to resolution of incidents resolved in the window; null when none was. */
  readonly meanTimeToResolveMs: number | null;
}

export async function incidentFigures(db: Knex, orgId: string, sinceMs: number): Promise<IncidentFigures> {
  const since = new Date(sinceMs);
  const [openRows, created, resolved] = await Promise.all([
    db('incidents').select('severity').count({ n: '*' }).where({ org_id: orgId }).whereNull('resolved_at').groupBy('severity'),
    db('incidents').count({ n: '*' }).where({ org_id: orgId }).andWhere('created_at', '>=', since).first(),
    db('incidents').select('created_at', 'resolved_at').where({ org_id: orgId }).andWhere('resolved_at', '>=', since).limit(10_000),
  ]);
  const openBySeverity: Record<string, number> = {};
  let open = 0;
  for (const r of openRows as Array<{ severity: string | null; n: string | number }>) {
    const n = Number(r.n);
    open += n;
    openBySeverity[r.severity ?? 'unknown'] = (openBySeverity[r.severity ?? 'unknown'] ?? 0) + n;
  }
  const durations = (resolved as Array<{ created_at: unknown; resolved_at: unknown }>).map((r) =>
    new Date(r.resolved_at as string).getTime() - new Date(r.created_at as string).getTime());
  return {
    open,
    openBySeverity,
    createdInWindow: Number((created as { n?: unknown } | undefined)?.n ?? 0),
    resolvedInWindow: durations.length,
    meanTimeToResolveMs: durations.length === 0 ? null : Math.round(durations.reduce((a, b) => a + b, 0) / durations.length),
  };
}

export async function activePolicyTags(db: Knex, orgId: string): Promise<string[]> {
  const rows = await db('policies').select('regulatory_tags').where({ org_id: orgId, status: 'active' }).limit(10_000);
  const tags = new Set<string>();
  for (const r of rows as Array<{ regulatory_tags: unknown }>) {
    const parsed = typeof r.regulatory_tags === 'string' ? (JSON.parse(r.regulatory_tags) as unknown) : r.regulatory_tags;
    if (Array.isArray(parsed)) for (const t of parsed) tags.add(String(t));
  }
  return [...tags].sort();
}

export async function incidentIoConnection(db: Knex, orgId: string): Promise<{ connected: boolean; secretSource: 'org' | 'environment' | null }> {
  const row = await db('incident_io_connections').select('connected', 'sealed_secret').where({ org_id: orgId }).first();
  if (!row || !row.connected) return { connected: false, secretSource: null };
  return { connected: true, secretSource: row.sealed_secret === null ? 'environment' : 'org' };
}

/** Display names of the org's users among `ids`; ids that are not users (keys, workers, `webhook:…`) are left out. */
export async function userNames(db: Knex, orgId: string, ids: readonly string[]): Promise<Record<string, string>> {
  const uuids = ids.filter((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id));
  if (uuids.length === 0) return {};
  const rows = await db('users as u').join('org_memberships as m', 'm.user_id', 'u.id')
    .where('m.org_id', orgId).whereIn('u.id', uuids).select('u.id', 'u.email', 'u.first_name', 'u.last_name');
  const out: Record<string, string> = {};
  for (const r of rows as Array<{ id: string; email: string; first_name: string | null; last_name: string | null }>) {
    const full = [r.first_name, r.last_name].filter(Boolean).join(' ');
    out[r.id] = full || r.email;
  }
  return out;
}
