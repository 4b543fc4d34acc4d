import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { upsertOptionSnapshots, type OptionSnapshot } from '../../storage/plugins/option-snapshots.js';
import { MAX_OPTIONS_BYTES, optionsSnapshotBody, optionsSnapshotReply } from '../../schemas/daemon-extras/bodies.js';
import { orgPrincipal, requesterOf } from '../principal.js';
import type { Route } from '../types.js';
import { route } from '../route.js';

/**
 * Plugin option snapshots (spec 4.2, decision 0012): a daemon (or an operator's tool) reports the option
 * metadata of installed plugin verbs for one project; each entry replaces the stored one of its (org, project,
 * plugin, verb). Guards: body orgId is the caller's org, and the project is inside the org and, for a runtime
 * token, inside the projects its `prj` claim allows (403 either way). Malformed entries are skipped with a reason.
 */

const idPattern = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Splits the entries into storable snapshots and reasons for the rest; the last entry for a (plugin, verb) wins. */
export function screenSnapshots(entries: readonly unknown[]): { snapshots: OptionSnapshot[]; skipped: string[] } {
  const skipped: string[] = [];
  const byKey = new Map<string, { index: number; snapshot: OptionSnapshot }>();
  entries.forEach((entry, i) => {
    const e = entry as { pluginId?: unknown; verbId?: unknown; options?: unknown } | null;
    if (e === null || typeof e !== 'object' || Array.isArray(e)) return void skipped.push(`snapshots[${i}]: not an object`);
    if (typeof e.pluginId !== 'string' || !idPattern.test(e.pluginId)) return void skipped.push(`snapshots[${i}]: invalid pluginId`);
    if (typeof e.verbId !== 'string' || !idPattern.test(e.verbId)) return void skipped.push(`snapshots[${i}]: invalid verbId`);
    if (e.options === undefined) return void skipped.push(`snapshots[${i}]: options missing`);
    if (Buffer.byteLength(JSON.stringify(e.options)) > MAX_OPTIONS_BYTES) {
      return void skipped.push(`snapshots[${i}]: options larger than ${MAX_OPTIONS_BYTES} bytes`);
    }
    const key = `${e.pluginId}\u0000${e.verbId}`;
    const earlier = byKey.get(key);
    if (earlier) skipped.push(`snapshots[${earlier.index}]: superseded by snapshots[${i}] for the same plugin verb`);
    byKey.set(key, { index: i, snapshot: { pluginId: e.pluginId, verbId: e.verbId, options: e.options } });
  });
  return { snapshots: [...byKey.values()].map((v) => v.snapshot), skipped };
}

export function pluginOptionRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post',
      path: '/api/daemon/options/snapshot',
      auth: 'any',
      summary: 'Upsert option metadata of installed plugin verbs for one (orgId, projectId), by (pluginId, verbId)',
      tags: ['daemon'],
      bodySchema: optionsSnapshotBody,
      responseSchema: optionsSnapshotReply,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const body = req.body;
        if (body.orgId !== p.orgId) throw new TroupeError('TENANT_MISMATCH');
        const projectRefused = new TroupeError('AUTH_FORBIDDEN', 'projectId is outside the caller\'s project boundary', { field: 'projectId' });
        if (!uuidPattern.test(body.projectId)) throw projectRefused;
        if (p.kind === 'runtime' && !p.projectIds.includes(body.projectId)) throw projectRefused;
        if (!(await projectsInOrg(deps.db, p.orgId, [body.projectId])).has(body.projectId)) throw projectRefused;
        if (p.kind !== 'runtime') {
          // Humans and keys write option metadata as project operators (member, editor, write scope and up). Asked
          // here, not declared on the route: a worker's project boundary is its token's claim, and Cedar is not asked.
          await deps.authz.authorize(p, 'operate', { type: 'Project', id: body.projectId, orgId: p.orgId, projectId: body.projectId });
        }
        const { snapshots, skipped } = screenSnapshots(body.snapshots);
        const upserted = await upsertOptionSnapshots(deps.db, {
          orgId: p.orgId, projectId: body.projectId, updatedBy: requesterOf(p), at: deps.clock.now(),
        }, snapshots);
        return { body: { ok: true, upserted, skipped } };
      },
    }),
  ];
}
