import type { Knex } from 'knex';
import { appendAudit } from '../audit-log.js';
import { withStorageErrors } from '../storage-errors.js';

/**
 * Read models of workflow templates, written only by the template actor's projection (inside its snapshot
 * transaction) and read by the routes. Every query is scoped by org: another org's slug is simply not found.
 */
export interface TemplateRow {
  readonly orgId: string;
  readonly slug: string;
  readonly name: string;
  readonly description: string;
  readonly definitionYaml: string;
  readonly draftRevision: number;
  readonly draftUpdatedAt: string;
  readonly draftUpdatedBy: string;
  readonly liveVersion: number | null;
  readonly createdAt: string;
}

export interface TemplateVersionRow {
  readonly version: number;
  readonly name: string;
  readonly description: string;
  readonly definitionYaml: string;
  readonly definitionVersion: string;
  readonly schemaHash: string;
  readonly publishedBy: string;
  readonly changeReason: string | null;
  readonly publishedAt: string;
}

export async function writeTemplateDraft(trx: Knex.Transaction, t: TemplateRow): Promise<void> {
  const row = {
    name: t.name, description: t.description, definition_yaml: t.definitionYaml, draft_revision: t.draftRevision,
    draft_updated_at: t.draftUpdatedAt, draft_updated_by: t.draftUpdatedBy, live_version: t.liveVersion,
  };
  await trx('templates').insert({ org_id: t.orgId, slug: t.slug, created_at: t.createdAt, ...row }).onConflict(['org_id', 'slug']).merge(row);
}

/**
 * A published version and its audit entry, in the actor's transaction. A replayed projection of the same publish
 * finds the row and does nothing (the trigger would refuse an overwrite anyway).
 */
export async function insertTemplateVersion(
  trx: Knex.Transaction, orgId: string, slug: string, v: TemplateVersionRow,
): Promise<void> {
  const inserted = await trx('template_versions').insert({
    org_id: orgId, slug, version: v.version, name: v.name, description: v.description, definition_yaml: v.definitionYaml,
    definition_version: v.definitionVersion, schema_hash: v.schemaHash, published_by: v.publishedBy, change_reason: v.changeReason,
    published_at: v.publishedAt,
  }).onConflict(['org_id', 'slug', 'version']).ignore().returning('version');
  if (inserted.length === 0) return;
  await appendAudit(trx, {
    orgId, type: 'template.version_published', actor: v.publishedBy, subject: `template:${slug}`,
    payload: { slug, version: v.version, schemaHash: v.schemaHash, changeReason: v.changeReason },
  });
}

const iso = (v: unknown): string => new Date(v as string).toISOString();

export async function findTemplate(db: Knex, orgId: string, slug: string): Promise<TemplateRow | undefined> {
  const r = await withStorageErrors(() => db('templates').where({ org_id: orgId, slug }).first());
  if (!r) return undefined;
  return {
    orgId: r.org_id, slug: r.slug, name: r.name, description: r.description, definitionYaml: r.definition_yaml,
    draftRevision: Number(r.draft_revision), draftUpdatedAt: iso(r.draft_updated_at), draftUpdatedBy: r.draft_updated_by,
    liveVersion: r.live_version === null ? null : Number(r.live_version), createdAt: iso(r.created_at),
  };
}

/** Versions cap what one read returns; older ones stay stored. */
export const MAX_TEMPLATE_VERSIONS_LISTED = 200;

/** Newest first. */
export async function templateVersions(db: Knex, orgId: string, slug: string, limit = MAX_TEMPLATE_VERSIONS_LISTED): Promise<TemplateVersionRow[]> {
  const rows = await withStorageErrors(() =>
    db('template_versions').where({ org_id: orgId, slug }).orderBy('version', 'desc').limit(limit));
  return rows.map((r: Record<string, unknown>) => ({
    version: Number(r.version), name: r.name as string, description: r.description as string, definitionYaml: r.definition_yaml as string,
    definitionVersion: r.definition_version as string, schemaHash: r.schema_hash as string, publishedBy: r.published_by as string,
    changeReason: (r.change_reason as string | null) ?? null, publishedAt: iso(r.published_at),
  }));
}
