import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/services/deps.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { findSession } from '../../storage/sessions/queries.js';
import { DEFAULT_WINDOW_DAYS, recordGraph } from '../../storage/analytics/graph.js';
import { graphProjection } from '../../actors/services/analytics/graph.js';
import { paletteKinds, projectPalette, type PaletteKind } from '../../storage/analytics/palette.js';
import { graphQuery, graphReply, graphWriteBody, graphWriteReply, paletteQuery, paletteReply } from '../../schemas/analytics/http.js';
import { orgPrincipal } from '../principal.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';

/**
 * A project's analytics (decision 0013): its knowledge graph, read as a bounded projection and written by the
 * sessions that learn it, and the palette of resources it can use. Every query takes the org from the verified
 * principal, never from the request.
 */

/** A project of the caller's org, or 404 (absent, malformed, or another org's). */
async function projectOfOrg(deps: Deps, orgId: string, projectId: string | undefined): Promise<string> {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  if (projectId === undefined || !uuid.test(projectId) || !(await projectsInOrg(deps.db, orgId, [projectId])).has(projectId)) {
    throw new TroupeError('NOT_FOUND', 'project not found');
  }
  return projectId;
}

/** Cedar `read` on the project `:projectId` names, found in the caller's org first (404 otherwise). */
const readProject: RouteAuthorization<Deps, any, string> = {
  find: (req, deps, p) => projectOfOrg(deps, p.orgId, req.params.projectId),
  action: 'read',
  resource: (_req, p, projectId) => ({ type: 'Project', id: projectId, orgId: p.orgId, projectId }),
};

export function projectAnalyticsRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get',
      path: '/api/projects/:projectId/graph',
      auth: 'org',
      summary: 'Knowledge-graph projection of a project: fresh entities (window days or all), top-N by importance, top-N edges, server layout',
      tags: ['analytics'],
      querySchema: graphQuery,
      responseSchema: graphReply,
      authorize: readProject,
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const raw = req.query.get('window');
        const days = raw === null ? DEFAULT_WINDOW_DAYS : raw === 'all' ? null : Number.parseInt(raw, 10);
        return { body: await graphProjection(deps.db, p.orgId, projectId, days, deps.clock.now()) };
      },
    }),
    route({
      method: 'post',
      path: '/api/projects/:projectId/graph/entities',
      auth: 'any',
      summary: 'Record entities and relationships a session learnt (upsert by type and name; relationships reinforce; sessionId counts recalls)',
      tags: ['analytics'],
      bodySchema: graphWriteBody,
      responseSchema: graphWriteReply,
      authorize: {
        find: (req, deps, p) => projectOfOrg(deps, p.orgId, req.params.projectId),
        // A worker reports within the projects its token names; people and keys need edit rights on sessions.
        action: (_req, p) => (p.kind === 'runtime' ? 'report' : 'edit'),
        resource: (req, p, projectId) => ({ type: 'Session', id: req.body.sessionId ?? 'graph', orgId: p.orgId, projectId }),
      },
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const body = req.body;
        const session = body.sessionId === undefined ? undefined : await findSession(deps.db, p.orgId, body.sessionId);
        if (body.sessionId !== undefined && (!session || session.projectId !== projectId)) {
          throw new TroupeError('NOT_FOUND', 'session not found', { field: 'sessionId' });
        }
        const written = await recordGraph(deps.db, {
          orgId: p.orgId, projectId, sessionId: session?.key ?? null, entities: body.entities, relationships: body.relationships ?? [],
          now: deps.clock.now(),
        });
        return { body: written };
      },
    }),
    route({
      method: 'get',
      path: '/api/projects/:projectId/palette',
      auth: 'any',
      summary: 'Resources a project can use, grouped by kind (repo, tracker, ci, hosting, incident, plugin, worker); project-viewer access or 403',
      tags: ['analytics'],
      querySchema: paletteQuery,
      responseSchema: paletteReply,
      authorize: {
        async find(req, deps, p) {
          const projectId = req.params.projectId;
          // Spec 7: missing project access is 403 here. An absent or foreign project gets the same answer, so the
          // route is not an oracle for which project ids exist.
          const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
          if (projectId === undefined || !uuid.test(projectId) || !(await projectsInOrg(deps.db, p.orgId, [projectId])).has(projectId)) {
            throw new TroupeError('AUTHZ_DENIED', 'no access to this project');
          }
          return projectId;
        },
        action: 'read',
        resource: (_req, p, projectId) => ({ type: 'Project', id: projectId, orgId: p.orgId, projectId }),
      },
      async handler(req, deps, { found: projectId }) {
        const p = orgPrincipal(req);
        const raw = req.query.get('kind');
        if (raw !== null && !(paletteKinds as readonly string[]).includes(raw)) {
          throw new TroupeError('HTTP_BAD_QUERY', `query parameter 'kind' must be one of ${paletteKinds.join(', ')}`, { field: 'kind' });
        }
        const liveSince = deps.clock.now() - deps.config.sessionLeaseMs;
        return { body: { groups: await projectPalette(deps.db, p.orgId, projectId, (raw ?? undefined) as PaletteKind | undefined, liveSince) } };
      },
    }),
  ];
}
