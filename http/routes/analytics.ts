import type { Deps } from '../../actors/services/deps.js';
import { phaseMetrics, type PhaseMetricRange } from '../../storage/analytics/phase-metrics.js';
import { armPosteriors, observationsPage, routingHealth } from '../../storage/analytics/router.js';
import { platformAggregates } from '../../storage/analytics/aggregates.js';
import { sessionsByStatus } from '../../storage/analytics/operator.js';
import {
  aggregatesReply, MAX_OBSERVATIONS_PAGE, operatorSessionRow, operatorSessionsQuery, phaseMetricsQuery, phaseMetricsReply, routerQuery, routerReply,
} from '../../schemas/analytics/http.js';
import { orgPrincipal } from '../principal.js';
import type { Route, RouteAuthorization } from '../types.js';
import { route } from '../route.js';
import { projectAnalyticsRoutes } from './project-analytics.js';

/**
 * Operations and analytics (decision 0013): phase metrics, router performance, platform aggregates, the project
 * knowledge graph and resource palette (project-analytics.ts), and the operator's session list. Every read goes to
 * read models; every org-scoped query takes the org from the verified principal, never from the request.
 */

const readOrg: RouteAuthorization<Deps> = { action: 'read', resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }) };

const intParam = (raw: string | null, fallback: number, max: number): number => {
  const n = raw === null ? fallback : Number.parseInt(raw, 10);
  return Math.min(max, Math.max(1, Number.isFinite(n) ? n : fallback));
};

export function analyticsRoutes(): Route<Deps>[] {
  return [...orgMetricRoutes(), ...projectAnalyticsRoutes(), operatorSessionsRoute()];
}

/** Figures of the caller's org, and the platform's anonymised ones. */
function orgMetricRoutes(): Route<Deps>[] {
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
  ];
}

function operatorSessionsRoute(): Route<Deps> {
  return route({
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
  });
}
