import type { Knex } from 'knex';
import { withStorageErrors } from '../storage-errors.js';

/**
 * Read models of workflows and their immutable version snapshots. Written only by the workflow actor's projection
 * (in its snapshot transaction); read by HTTP handlers and by the execution layer. Every query is scoped by org.
 */
export interface VersionRecord {
  readonly workflowId: string;
  readonly orgId: string;
  readonly version: number;
  readonly status: string;
  readonly name: string;
  readonly nodes: unknown[];
  readonly edges: unknown[];
  readonly viewport: Record<string, unknown>;
  readonly definitionYaml: string;
  readonly definitionVersion: string;
  readonly triggerConfig: Record<string, unknown>;
  readonly providerRequirements: unknown[];
  readonly workflowConfig: Record<string, unknown>;
  readonly schemaHash: string;
  readonly changedBy: string;
  readonly changeReason: string | null;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

export interface WorkflowRecord {
  readonly id: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly name: string;
  readonly status: 'draft' | 'published' | 'archived';
  readonly version: number;
  readonly publishedVersion: number | null;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface VersionSummary {
  readonly version: number;
  readonly changedBy: string;
  readonly changeReason: string | null;
  readonly createdAt: string;
  readonly schemaHash: string;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids from a URL are checked before they reach a uuid column, so a malformed one is "absent", not a 500. */
export const isUuid = (value: string): boolean => uuidPattern.test(value);
const iso = (v: unknown): string => (v instanceof Date ? v : new Date(String(v))).toISOString();

/** Appends the snapshot and moves the workflow row to it; both in the caller's transaction. */
export async function writeVersion(trx: Knex.Transaction, workflow: WorkflowRecord, snapshot: VersionRecord): Promise<void> {
  await trx('workflow_versions').insert({
    workflow_id: snapshot.workflowId,
    version: snapshot.version,
    org_id: snapshot.orgId,
    status: snapshot.status,
    name: snapshot.name,
    nodes: JSON.stringify(snapshot.nodes),
    edges: JSON.stringify(snapshot.edges),
    viewport: JSON.stringify(snapshot.viewport),
    definition_yaml: snapshot.definitionYaml,
    definition_version: snapshot.definitionVersion,
    trigger_config: JSON.stringify(snapshot.triggerConfig),
    provider_requirements: JSON.stringify(snapshot.providerRequirements),
    workflow_config: JSON.stringify(snapshot.workflowConfig),
    schema_hash: snapshot.schemaHash,
    changed_by: snapshot.changedBy,
    change_reason: snapshot.changeReason,
    created_at: snapshot.createdAt,
  });
  const row = {
    org_id: workflow.orgId,
    project_id: workflow.projectId,
    name: workflow.name,
    status: workflow.status,
    version: workflow.version,
    published_version: workflow.publishedVersion,
    created_by: workflow.createdBy,
    created_at: workflow.createdAt,
    updated_at: workflow.updatedAt,
  };
  await trx('workflows').insert({ id: workflow.id, ...row }).onConflict('id').merge(row);
}

export async function findWorkflow(db: Knex, orgId: string, id: string): Promise<WorkflowRecord | undefined> {
  if (!isUuid(id)) return undefined;
  const row = await withStorageErrors(() => db('workflows').where({ org_id: orgId, id }).first());
  return row ? toWorkflow(row) : undefined;
}

export async function listWorkflows(db: Knex, orgId: string, projectId?: string): Promise<WorkflowRecord[]> {
  if (projectId !== undefined && !isUuid(projectId)) return [];
  const rows = await withStorageErrors(() => {
    const q = db('workflows').where({ org_id: orgId }).orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(1000);
    if (projectId !== undefined) q.andWhere({ project_id: projectId });
    return q;
  });
  return rows.map(toWorkflow);
}

export async function findVersion(db: Knex, orgId: string, workflowId: string, version: number): Promise<VersionRecord | undefined> {
  if (!isUuid(workflowId) || !Number.isSafeInteger(version)) return undefined;
  const row = await withStorageErrors(() => db('workflow_versions').where({ org_id: orgId, workflow_id: workflowId, version }).first());
  return row ? toVersion(row) : undefined;
}

/** Newest first (spec 4.4). */
export async function listVersions(db: Knex, orgId: string, workflowId: string): Promise<VersionSummary[]> {
  if (!isUuid(workflowId)) return [];
  const rows = await withStorageErrors(() =>
    db('workflow_versions').where({ org_id: orgId, workflow_id: workflowId }).orderBy('version', 'desc').limit(10_000)
      .select('version', 'changed_by', 'change_reason', 'created_at', 'schema_hash'));
  return rows.map((r: Record<string, unknown>) => ({
    version: Number(r.version),
    changedBy: String(r.changed_by),
    changeReason: (r.change_reason as string | null) ?? null,
    createdAt: iso(r.created_at),
    schemaHash: String(r.schema_hash),
  }));
}

function toWorkflow(r: Record<string, unknown>): WorkflowRecord {
  return {
    id: String(r.id),
    orgId: String(r.org_id),
    projectId: String(r.project_id),
    name: String(r.name),
    status: r.status as WorkflowRecord['status'],
    version: Number(r.version),
    publishedVersion: r.published_version === null || r.published_version === undefined ? null : Number(r.published_version),
    createdBy: String(r.created_by),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

function toVersion(r: Record<string, unknown>): VersionRecord {
  return {
    workflowId: String(r.workflow_id),
    orgId: String(r.org_id),
    version: Number(r.version),
    status: String(r.status),
    name: String(r.name),
    nodes: r.nodes as unknown[],
    edges: r.edges as unknown[],
    viewport: r.viewport as Record<string, unknown>,
    definitionYaml: String(r.definition_yaml),
    definitionVersion: String(r.definition_version),
    triggerConfig: r.trigger_config as Record<string, unknown>,
    providerRequirements: r.provider_requirements as unknown[],
    workflowConfig: r.workflow_config as Record<string, unknown>,
    schemaHash: String(r.schema_hash),
    changedBy: String(r.changed_by),
    changeReason: (r.change_reason as string | null) ?? null,
    createdAt: iso(r.created_at),
  };
}
