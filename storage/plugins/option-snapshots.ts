import type { Knex } from 'knex';

/**
 * Plugin option snapshots (migration 0008): option metadata (autocomplete choices and the like) of installed plugin
 * verbs, one row per (org, project, plugin, verb), replaced whole by each upsert. Read by the authoring and palette
 * rooms through `pluginVerbs`.
 */

export interface OptionSnapshot {
  readonly pluginId: string;
  readonly verbId: string;
  readonly options: unknown;
}

export async function upsertOptionSnapshots(
  db: Knex, scope: { orgId: string; projectId: string; updatedBy: string; at: number }, snapshots: readonly OptionSnapshot[],
): Promise<number> {
  if (snapshots.length === 0) return 0;
  const at = new Date(scope.at);
  // Sorted so two concurrent upserts of overlapping sets lock rows in the same order (no deadlock).
  const rows = [...snapshots]
    .sort((a, b) => (a.pluginId === b.pluginId ? cmp(a.verbId, b.verbId) : cmp(a.pluginId, b.pluginId)))
    .map((s) => ({
      org_id: scope.orgId, project_id: scope.projectId, plugin_id: s.pluginId, verb_id: s.verbId,
      options: JSON.stringify(s.options), updated_by: scope.updatedBy, updated_at: at,
    }));
  await db('plugin_option_snapshots').insert(rows)
    .onConflict(['org_id', 'project_id', 'plugin_id', 'verb_id'])
    .merge(['options', 'updated_by', 'updated_at']);
  return rows.length;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export interface PluginVerb {
  readonly pluginId: string;
  readonly verbId: string;
  readonly options: unknown;
  readonly updatedAt: string;
}

/** Every plugin verb snapshotted for the project, ordered by plugin then verb. */
export async function pluginVerbs(db: Knex, orgId: string, projectId: string): Promise<PluginVerb[]> {
  const rows = await db('plugin_option_snapshots').where({ org_id: orgId, project_id: projectId })
    .orderBy([{ column: 'plugin_id' }, { column: 'verb_id' }]).select('plugin_id', 'verb_id', 'options', 'updated_at');
  return rows.map((r: Record<string, unknown>) => ({
    pluginId: r.plugin_id as string,
    verbId: r.verb_id as string,
    options: typeof r.options === 'string' ? JSON.parse(r.options) : r.options,
    updatedAt: new Date(r.updated_at as string).toISOString(),
  }));
}
