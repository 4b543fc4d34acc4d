import { TroupeError } from '../../ops/kernel/errors.js';
import type { Deps } from '../../actors/deps.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { findSession } from '../../storage/sessions/queries.js';
import { phaseMetrics, type PhaseMetricRange } from '../../storage/analytics/phase-metrics.js';
import { armPosteriors, observationsPage, routingHealth } from '../../storage/analytics/router.js';
import { platformAggregates } from '../../storage/analytics/aggregates.js';
import { DEFAULT_WINDOW_DAYS, recordGraph } from '../../storage/analytics/graph.js';
import { graphProjection } from '../../actors/analytics/graph.js';
import { paletteKinds, projectPalette, type PaletteKind } from '../../storage/analytics/palette.js';
import { sessionsByStatus } from '../../storage/analytics/operator.js';
import {
  aggregatesReply, graphQuery, graphReply, graphWriteBody, graphWriteReply, MAX_OBSERVATIONS_PAGE, operatorSessionRow, operatorSessionsQuery, paletteQuery,
  paletteReply, phaseMetricsQuery, phaseMetricsReply, routerQuery, routerReply,
} from '../../schemas/analytics/http.js';
import { orgPrincipal } from '../principal.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';

/**
 * Operations and analytics (decision 0013): phase metrics, router performance, platform aggregates, the project
 * knowledge graph and resource palette, and the operator's session list. Every read goes to read models; every
 * org-scoped query takes the org from the verified principal, never from the request.
 */

const readOrg: RouteAuthorization<Deps> = { action: 'read', resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }) };

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

const intParam = (raw: string | null, fallback: number, max: number): number => {
  const n = raw === null ? fallback : Number.parseInt(raw, 10);
  return Math.min(max, Math.max(1, Number.isFinite(n) ? n : fallback));
};

export function analyticsRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get',
      path: '/api/public/phase-metrics',
      auth: 'org',
      summary: 'Phase metrics of the caller\'s org over 7d, 30d (default) or 90d, from the phase records sessions report with their status transitions',
      tags: ['analytics'],
      querySchema: phaseMetricsQuery,
      responseSchema: phaseMetricsReply,
      authorize: readOrg,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const range = (req.query.get('timeRange') ?? '30d') as PhaseMetricRange;
        return { body: await phaseMetrics(deps.db, p.orgId, range, deps.clock.now()) };
      },
    }),
    route({
      method: 'get',
      path: '/api/router/performance',
      auth: 'org',
      summary: 'Beta posterior per (provider, workType) arm, recent outcomes newest first (keyset cursor), routing health',
      tags: ['analytics'],
      querySchema: routerQuery,
      responseSchema: routerReply,
      authorize: readOrg,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const limit = intParam(req.query.get('limit'), 25, MAX_OBSERVATIONS_PAGE);
        const arms = await armPosteriors(deps.db, p.orgId);
        const [page, health] = await Promise.all([
          observationsPage(deps.db, p.orgId, limit, req.query.get('cursor') ?? undefined),
          routingHealth(deps.db, p.orgId, arms, deps.clock.now()),
        ]);
        return { body: { arms, ...page, health } };
      },
    }),
    {
      method: 'get',
      path: '/api/platform/aggregates',
      auth: 'org',
      summary: 'Anonymised platform-wide session outcomes per complete week; cells from fewer than kAnonymityFloor orgs are withheld',
      tags: ['analytics'],
      // No parameters at all: a caller-chosen filter could carve a cell down to one org.
      querySchema: { type: 'object', additionalProperties: false, properties: {} },
      responseSchema: aggregatesReply,
      async handler(_req, deps) {
        return { body: await platformAggregates(deps.db, deps.config.kAnonymityFloor, deps.clock.now()) };
      },
    },
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
    route({
      method: 'get',
      path: '/api/fleet/sessions',
      auth: 'org',
      summary: "The org's sessions, optionally of one status, most recently active first (the operator's `troupe sessions`)",
      tags: ['analytics', 'sessions'],
      querySchema: operatorSessionsQuery,
      responseSchema: { type: 'object', required: ['sessions'], properties: { sessions: { type: 'array', items: operatorSessionRow } } },
      authorize: { action: 'read', resource: (_req, p) => ({ type: 'Session', id: 'list', orgId: p.orgId }) },
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const limit = intParam(req.query.get('limit'), 100, 500);
        return { body: { sessions: await sessionsByStatus(deps.db, p.orgId, req.query.get('status') ?? undefined, limit) } };
      },
    }),
  ];
}
