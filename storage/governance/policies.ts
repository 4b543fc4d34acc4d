import type { Knex } from 'knex';
import type { PolicyRecord, PolicyScope, PolicyStatus, PolicyVersionRecord } from '../../schemas/governance/policy.js';

/**
 * The `policies` and `policy_versions` read models. Written only by the policy actor's projection (inside its
 * snapshot transaction); read by the HTTP routes and by enforcement. Every query is scoped by org.
 */

/**
 * A policy as the API shows it (spec 2.4): the record, with the org as the workspace and times as ISO 8601, its
 * arrays and maps copies the caller may keep.
 */
export type PolicyView = Omit<PolicyRecord, 'orgId' | 'regulatoryTags' | 'metadata' | 'createdAt' | 'updatedAt' | 'archivedAt'> & {
  readonly workspaceId: string;
  readonly regulatoryTags: string[];
  readonly metadata: Record<string, unknown>;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly archivedAt: string | null;
};

export interface PolicyVersionView {
  readonly id: string;
  readonly policyId: string;
  readonly version: number;
  readonly cedarPolicy: string;
  readonly changedBy: string;
  readonly changeReason: string;
  readonly createdAt: string;
}

/** Idempotent upsert: replaying the same projection leaves the same row. */
export async function writePolicy(trx: Knex, p: PolicyRecord): Promise<void> {
  const row = {
    id: p.id, org_id: p.orgId, name: p.name, description: p.description, cedar_policy: p.cedarPolicy, scope: p.scope,
    scope_id: p.scopeId, status: p.status, version: p.version, regulatory_tags: JSON.stringify(p.regulatoryTags),
    metadata: JSON.stringify(p.metadata), created_by: p.createdBy, created_at: new Date(p.createdAt),
    updated_at: new Date(p.updatedAt), archived_at: p.archivedAt === null ? null : new Date(p.archivedAt),
  };
  await trx('policies').insert(row).onConflict('id').merge();
}

/** Versions are immutable; a replayed projection of the same version is ignored. */
export async function appendPolicyVersion(trx: Knex, orgId: string, v: PolicyVersionRecord): Promise<void> {
  await trx('policy_versions').insert({
    id: v.id, org_id: orgId, policy_id: v.policyId, version: v.version, cedar_policy: v.cedarPolicy,
    changed_by: v.changedBy, change_reason: v.changeReason, created_at: new Date(v.createdAt),
  }).onConflict(['policy_id', 'version']).ignore();
}

export async function findPolicy(db: Knex, orgId: string, policyId: string): Promise<PolicyView | undefined> {
  const row = await db('policies').where({ org_id: orgId, id: policyId }).first();
  return row ? toPolicyView(row) : undefined;
}

/** Newest first. */
export async function listPolicyVersions(db: Knex, orgId: string, policyId: string): Promise<PolicyVersionView[]> {
  const rows = await db('policy_versions').where({ org_id: orgId, policy_id: policyId }).orderBy('version', 'desc');
  return rows.map(toVersionView);
}

export interface PolicyFilter {
  readonly status?: PolicyStatus;
  readonly scope?: PolicyScope;
  readonly limit: number;
  readonly offset: number;
}

/** Newest first. */
export async function listPolicies(db: Knex, orgId: string, filter: PolicyFilter): Promise<PolicyView[]> {
  const q = db('policies').where({ org_id: orgId });
  if (filter.status) q.andWhere({ status: filter.status });
  if (filter.scope) q.andWhere({ scope: filter.scope });
  const rows = await q.orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'asc' }]).limit(filter.limit).offset(filter.offset);
  return rows.map(toPolicyView);
}

/** The policies enforced for a decision on a resource of `orgId` (and `projectId`, when it has one). */
export async function activePolicies(db: Knex, orgId: string, projectId: string | undefined): Promise<Array<{ id: string; version: number; cedarPolicy: string }>> {
  const q = db('policies').select('id', 'version', 'cedar_policy').where({ org_id: orgId, status: 'active' })
    .andWhere((w) => {
      w.where({ scope: 'workspace' });
      if (projectId !== undefined) w.orWhere({ scope: 'project', scope_id: projectId });
    });
  const rows = await q.orderBy('id');
  return rows.map((r: Record<string, unknown>) => ({ id: String(r.id), version: Number(r.version), cedarPolicy: String(r.cedar_policy) }));
}

export async function countPoliciesByStatus(db: Knex, orgId: string): Promise<Record<PolicyStatus, number>> {
  const rows = await db('policies').select('status').count({ n: '*' }).where({ org_id: orgId }).groupBy('status');
  const out: Record<PolicyStatus, number> = { draft: 0, active: 0, archived: 0 };
  for (const r of rows as Array<{ status: PolicyStatus; n: string | number }>) out[r.status] = Number(r.n);
  return out;
}

const iso = (value: unknown): string => (value instanceof Date ? value : new Date(String(value))).toISOString();
const json = <T>(value: unknown, fallback: T): T => {
  const parsed = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  return (parsed ?? fallback) as T;
};

function toPolicyView(r: Record<string, unknown>): PolicyView {
  return {
    id: String(r.id), workspaceId: String(r.org_id), name: String(r.name), description: String(r.description),
    cedarPolicy: String(r.cedar_policy), scope: r.scope as PolicyScope, scopeId: String(r.scope_id),
    status: r.status as PolicyStatus, version: Number(r.version), regulatoryTags: json<string[]>(r.regulatory_tags, []),
    metadata: json<Record<string, unknown>>(r.metadata, {}), createdBy: String(r.created_by), createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at), archivedAt: r.archived_at === null || r.archived_at === undefined ? null : iso(r.archived_at),
  };
}

function toVersionView(r: Record<string, unknown>): PolicyVersionView {
  return {
    id: String(r.id), policyId: String(r.policy_id), version: Number(r.version), cedarPolicy: String(r.cedar_policy),
    changedBy: String(r.changed_by), changeReason: String(r.change_reason), createdAt: iso(r.created_at),
  };
}

/** The view of a record the actor just wrote, without reading it back. */
export function policyViewOf(p: PolicyRecord): PolicyView {
  return {
    id: p.id, workspaceId: p.orgId, name: p.name, description: p.description, cedarPolicy: p.cedarPolicy, scope: p.scope,
    scopeId: p.scopeId, status: p.status, version: p.version, regulatoryTags: [...p.regulatoryTags], metadata: { ...p.metadata },
    createdBy: p.createdBy, createdAt: new Date(p.createdAt).toISOString(), updatedAt: new Date(p.updatedAt).toISOString(),
    archivedAt: p.archivedAt === null ? null : new Date(p.archivedAt).toISOString(),
  };
}
