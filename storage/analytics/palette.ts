import type { Knex } from 'knex';
import { pluginVerbs } from '../plugins/option-snapshots.js';
import { findOAuthConnection } from '../integrations/oauth.js';
import { listRepositories } from '../repositories/repositories.js';

/**
 * The resource palette of a project: what a canvas can use, grouped by kind (decision 0013). Sources:
 * - provider integrations the org connected (`provider_integrations`, org-wide or bound to this project):
 *   linear → tracker, github → repo, circleci → ci, vercel → hosting; `connection: 'webhook'`;
 * - provider OAuth connections of the org (`findOAuthConnection`, always org-wide): linear → tracker, github → repo,
 *   sentry → errors; `connection: 'oauth'`, id `oauth:<provider>`, next to any webhook entry of the same provider
 *   (they are different capabilities: events in, API reads out). Only when and with what scope it was connected,
 *   and whether it must be authorized again (`status`), is shown; the sealed tokens never leave storage;
 * - the project's repositories (`project_repositories`, decision 0075) → repo, `provider: 'git'`, with their URL and
 *   default branch: what a dispatch or a workflow agent node may name;
 * - the incident.io connection (`incident_io_connections`) → incident;
 * - plugin verbs daemons snapshotted for the project (`pluginVerbs`) → plugin;
 * - daemon workers registered for the project (`daemon_workers`) → worker, with whether they are live.
 */

export const paletteKinds = ['repo', 'tracker', 'ci', 'hosting', 'errors', 'incident', 'plugin', 'worker'] as const;
export type PaletteKind = (typeof paletteKinds)[number];

const providerKinds: Record<string, PaletteKind> = { linear: 'tracker', github: 'repo', circleci: 'ci', vercel: 'hosting' };
const providerNames: Record<string, string> = { linear: 'Linear', github: 'GitHub', circleci: 'CircleCI', vercel: 'Vercel', sentry: 'Sentry' };
/** The providers of integration OAuth (actors/services/integrations/oauth/providers.ts; storage does not import actors). */
const oauthKinds: Record<string, PaletteKind> = { linear: 'tracker', github: 'repo', sentry: 'errors' };

export interface PaletteEntry {
  readonly id: string;
  readonly kind: PaletteKind;
  readonly provider: string;
  readonly name: string;
  readonly [extra: string]: unknown;
}

export async function projectPalette(
  db: Knex, orgId: string, projectId: string, kind: PaletteKind | undefined, liveSince: number,
): Promise<Record<string, PaletteEntry[]>> {
  const wanted = (k: PaletteKind): boolean => kind === undefined || kind === k;
  const groups: Record<string, PaletteEntry[]> = {};
  for (const k of paletteKinds) if (wanted(k)) groups[k] = [];
  const iso = (v: unknown): string => new Date(v as string).toISOString();

  if (Object.values(providerKinds).some(wanted)) {
    const rows = await db('provider_integrations').where({ org_id: orgId })
      .where((q) => q.whereNull('project_id').orWhere('project_id', projectId)).orderBy('provider').select('provider', 'project_id', 'updated_at');
    for (const r of rows as Record<string, unknown>[]) {
      const k = providerKinds[r.provider as string];
      if (k === undefined || !wanted(k)) continue;
      groups[k]!.push({
        id: `integration:${r.provider as string}`, kind: k, provider: r.provider as string,
        name: providerNames[r.provider as string] ?? (r.provider as string), scope: r.project_id === null ? 'org' : 'project',
        connection: 'webhook', connectedAt: iso(r.updated_at),
      });
    }
  }
  for (const [provider, k] of Object.entries(oauthKinds)) {
    if (!wanted(k)) continue;
    const c = await findOAuthConnection(db, orgId, provider);
    if (!c) continue;
    groups[k]!.push({
      id: `oauth:${provider}`, kind: k, provider, name: providerNames[provider] ?? provider, scope: 'org', connection: 'oauth',
      grantedScope: c.scope, expiresAt: c.expiresAt, connectedAt: c.updatedAt,
      status: c.status, statusChangedAt: c.statusChangedAt,
    });
  }
  if (wanted('repo')) {
    for (const r of await listRepositories(db, orgId, projectId)) {
      groups.repo!.push({
        id: r.id, kind: 'repo', provider: 'git', name: r.name, scope: 'project', connection: 'repository',
        url: r.url, defaultBranch: r.defaultBranch, createdAt: r.createdAt,
      });
    }
  }
  if (wanted('incident')) {
    const row = await db('incident_io_connections').where({ org_id: orgId, connected: true }).first('updated_at');
    if (row) groups.incident!.push({ id: 'integration:incident-io', kind: 'incident', provider: 'incident-io', name: 'incident.io', scope: 'org', connectedAt: iso(row.updated_at) });
  }
  if (wanted('plugin')) {
    for (const v of await pluginVerbs(db, orgId, projectId)) {
      groups.plugin!.push({ id: `plugin:${v.pluginId}:${v.verbId}`, kind: 'plugin', provider: v.pluginId, name: v.verbId, options: v.options, updatedAt: v.updatedAt });
    }
  }
  if (wanted('worker')) {
    const rows = await db('daemon_workers').where({ org_id: orgId }).whereRaw('project_ids @> ?::jsonb', [JSON.stringify([projectId])])
      .orderBy([{ column: 'hostname' }, { column: 'id' }]).limit(500).select('id', 'hostname', 'max_agents', 'last_seen_at');
    for (const r of rows as Record<string, unknown>[]) {
      groups.worker!.push({
        id: r.id as string, kind: 'worker', provider: 'daemon', name: r.hostname as string, maxAgents: Number(r.max_agents),
        online: new Date(r.last_seen_at as string).getTime() >= liveSince, lastSeenAt: iso(r.last_seen_at),
      });
    }
  }
  return groups;
}
