import type { Knex } from 'knex';
import { appendAudit, type AuditInput } from '../audit-log.js';
import { incidentUrl } from '../../schemas/governance/incident.js';

/**
 * The `incidents` read model (projected by the incident actor) and the incident.io connection rows. Every query
 * is scoped by org, except `connectedIncidentIo`, which the webhook needs to find which org signed a delivery.
 */

export interface IncidentRow {
  readonly id: string;
  readonly orgId: string;
  readonly source: string;
  readonly externalId: string;
  readonly title: string;
  readonly severity: string | null;
  readonly status: string;
  readonly summary: string | null;
  readonly url: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly resolvedAt: number | null;
}

/** The timestamps an incident row keeps as epoch milliseconds, shown as ISO-8601 strings. */
type IncidentTimes = 'createdAt' | 'updatedAt' | 'resolvedAt';

/** What routes show: the row, with its times as ISO-8601 strings. */
export type IncidentView = Omit<IncidentRow, IncidentTimes> & {
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly resolvedAt: string | null;
};

export async function writeIncident(trx: Knex, i: IncidentRow): Promise<void> {
  await trx('incidents').insert({
    id: i.id, org_id: i.orgId, source: i.source, external_id: i.externalId, title: i.title, severity: i.severity,
    status: i.status, summary: i.summary, url: i.url, created_at: new Date(i.createdAt), updated_at: new Date(i.updatedAt),
    resolved_at: i.resolvedAt === null ? null : new Date(i.resolvedAt),
  }).onConflict('id').merge();
}

export interface IncidentFilter {
  readonly statuses?: readonly string[];
  readonly severity?: string;
  readonly source?: string;
  readonly limit: number;
  readonly offset: number;
}

/** Newest first, with the total matching count for paging. */
export async function listIncidents(db: Knex, orgId: string, f: IncidentFilter): Promise<{ incidents: IncidentView[]; total: number }> {
  const base = db('incidents').where({ org_id: orgId });
  if (f.statuses && f.statuses.length > 0) base.whereIn('status', [...f.statuses]);
  if (f.severity) base.andWhere({ severity: f.severity });
  if (f.source) base.andWhere({ source: f.source });
  const [rows, count] = await Promise.all([
    base.clone().orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'asc' }]).limit(f.limit).offset(f.offset),
    base.clone().count({ n: '*' }).first(),
  ]);
  return { incidents: rows.map(toIncidentView), total: Number((count as { n?: unknown } | undefined)?.n ?? 0) };
}

const iso = (v: unknown): string => (v instanceof Date ? v : new Date(String(v))).toISOString();
const textOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

// A link stored before only http(s) ones were kept is not handed out either.
function toIncidentView(r: Record<string, unknown>): IncidentView {
  return {
    id: String(r.id), orgId: String(r.org_id), source: String(r.source), externalId: String(r.external_id),
    title: String(r.title), severity: textOrNull(r.severity), status: String(r.status), summary: textOrNull(r.summary),
    url: incidentUrl(r.url), createdAt: iso(r.created_at), updatedAt: iso(r.updated_at),
    resolvedAt: r.resolved_at === null || r.resolved_at === undefined ? null : iso(r.resolved_at),
  };
}

// --- incident.io connections ----------------------------------------------------------------------------------

export interface IncidentIoConnection {
  readonly orgId: string;
  /** Null: an environment-only row (verified with the legacy TROUPE_INCIDENT_IO_SECRET). */
  readonly sealedSecret: string | null;
  readonly updatedAt: string;
}

export async function upsertIncidentIoConnection(db: Knex, c: { orgId: string; sealedSecret: string | null; updatedBy: string; at: number }): Promise<void> {
  const at = new Date(c.at);
  await db('incident_io_connections').insert({
    org_id: c.orgId, sealed_secret: c.sealedSecret, connected: true, updated_by: c.updatedBy, created_at: at, updated_at: at,
  }).onConflict('org_id').merge(['sealed_secret', 'connected', 'updated_by', 'updated_at']);
}

export async function disconnectIncidentIo(db: Knex, orgId: string, at: number): Promise<boolean> {
  const n = await db('incident_io_connections').where({ org_id: orgId, connected: true }).update({ connected: false, updated_at: new Date(at) });
  return Number(n) > 0;
}

/** An org's connected row, if any. */
export async function incidentIoConnectionOf(db: Knex, orgId: string): Promise<IncidentIoConnection | undefined> {
  const r = await db('incident_io_connections').where({ org_id: orgId, connected: true }).first('org_id', 'sealed_secret', 'updated_at');
  return r ? { orgId: String(r.org_id), sealedSecret: textOrNull(r.sealed_secret), updatedAt: iso(r.updated_at) } : undefined;
}

/**
 * Gives the legacy environment secret to `orgId` (null: to no org), taking it from whichever org had it; each org
 * whose connection changes gets an entry in its audit chain, in the same transaction. Returns the previous holder.
 * The database holds at most one connected environment-only row (migration 0036).
 */
export async function assignIncidentIoEnvironmentSecret(
  db: Knex, orgId: string | null, at: number, audit: (orgId: string, type: string) => AuditInput,
): Promise<{ previousOrgId: string | null }> {
  return db.transaction(async (trx) => {
    const holder = await trx('incident_io_connections').where({ connected: true }).whereNull('sealed_secret').forUpdate().first('org_id');
    const previousOrgId = holder ? String(holder.org_id) : null;
    if (previousOrgId === orgId) return { previousOrgId };
    if (previousOrgId !== null) {
      await trx('incident_io_connections').where({ org_id: previousOrgId }).update({ connected: false, updated_at: new Date(at) });
      await appendAudit(trx, audit(previousOrgId, 'integration.environment_secret_removed'));
    }
    if (orgId !== null) {
      await upsertIncidentIoConnection(trx, { orgId, sealedSecret: null, updatedBy: 'platform-admin', at });
      await appendAudit(trx, audit(orgId, 'integration.environment_secret_assigned'));
    }
    return { previousOrgId };
  });
}

/** Every connected row, across orgs: a delivery that names no org is searched for among them. */
export async function connectedIncidentIo(db: Knex): Promise<IncidentIoConnection[]> {
  const rows = await db('incident_io_connections').where({ connected: true }).select('org_id', 'sealed_secret', 'updated_at');
  return rows.map((r: Record<string, unknown>) => ({ orgId: String(r.org_id), sealedSecret: textOrNull(r.sealed_secret), updatedAt: iso(r.updated_at) }));
}

// --- replay store ---------------------------------------------------------------------------------------------

/**
 * Records a verified delivery id; false when it was already recorded (a replay). The primary key makes this
 * atomic across nodes. Rows older than `pruneBeforeMs` are dropped on the way: past the replay window a delivery
 * fails its timestamp check, so remembering its id longer buys nothing.
 */
export async function recordDelivery(db: Knex, d: { provider: string; webhookId: string; orgId: string; at: number; pruneBeforeMs: number }): Promise<boolean> {
  await db('webhook_deliveries').where('received_at', '<', new Date(d.pruneBeforeMs)).andWhere({ provider: d.provider }).delete();
  // Keyed by org (migration 0036): another org's ids neither collide with this org's nor tell it anything.
  const inserted = await db('webhook_deliveries')
    .insert({ provider: d.provider, webhook_id: d.webhookId, org_id: d.orgId, received_at: new Date(d.at) })
    .onConflict(['provider', 'org_id', 'webhook_id']).ignore().returning('webhook_id');
  return inserted.length === 1;
}

/** Connects incident.io for an org and appends `audit` to its chain, in one transaction (one write, one place). */
export async function connectIncidentIo(
  db: Knex, c: { orgId: string; sealedSecret: string | null; updatedBy: string; at: number }, audit: AuditInput,
): Promise<void> {
  await db.transaction(async (trx) => {
    await upsertIncidentIoConnection(trx, c);
    await appendAudit(trx, audit);
  });
}
