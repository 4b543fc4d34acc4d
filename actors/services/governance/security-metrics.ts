import type { Knex } from 'knex';
import { verifyAudit } from '../../../storage/audit-log.js';
import { denialFigures, denialTimeline } from '../../../storage/governance/authz-denials.js';
import { countPoliciesByStatus } from '../../../storage/governance/policies.js';
import {
  activePolicyTags, auditCountsByType, auditTimeline, distinctAuditActors, incidentFigures, incidentIoConnection, userNames,
} from '../../../storage/governance/security-metrics.js';

/**
 * Security metrics (spec 2.7, 4.6), computed on request from the org's own records. Where each figure comes from:
 * - `metrics` (overview): audit entries in the window by type (`audit_log`), of which policy changes
 *   (`policy.*`) and refused webhook deliveries (`incident.webhook_rejected`); distinct audit actors; incidents
 *   opened / resolved in the window, open now, and mean time to resolve (`incidents`); policies by status.
 * - `health`: the audit chain re-verified (`verifyAudit`), open incidents by severity, refused webhooks in the
 *   window; `status` is `critical` with an open critical incident or a broken chain, `degraded` with any open
 *   incident or refused webhook, else `healthy`.
 *   Authorization denials in the window (`authz_denials`): total, by action and principal kind, evaluation errors.
 * - `timeline`: the newest audit entries and authorization denials of the window merged by time (at most `limit`,
 *   ≤ 100; each row's `source` is `audit` or `denial`), with `actorNames` naming users.
 * - `posture`: policies by status, regulatory tags covered by active policies, incident.io connection and where
 *   its secret comes from, and which policies determined the window's denials (`authz_denials`).
 * Denials are every refusal of `authorize`, recorded off the request path in batches of about a second (decision
 * 0009 "Recorded denials"), so the newest second may be missing; rows older than 90 days are pruned.
 */
export const metricTypes = ['overview', 'health', 'timeline', 'posture'] as const;
export type MetricType = (typeof metricTypes)[number];
export const timeRanges = { '24h': 24 * 3600_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000, '90d': 90 * 86_400_000 } as const;
export type TimeRange = keyof typeof timeRanges;
export const TIMELINE_MAX_ROWS = 100;

export interface SecurityMetrics {
  readonly metricType: MetricType;
  readonly timeRange: TimeRange;
  readonly generatedAt: string;
  readonly metrics: Record<string, unknown>;
  readonly health: Record<string, unknown>;
  readonly posture: Record<string, unknown>;
  readonly timeline: Array<Record<string, unknown>>;
  readonly actorNames: Record<string, string>;
}

export async function securityMetrics(
  db: Knex, orgId: string, q: { metricType: MetricType; timeRange: TimeRange; limit: number; now: number },
): Promise<SecurityMetrics> {
  const since = q.now - timeRanges[q.timeRange];
  const out: SecurityMetrics = {
    metricType: q.metricType, timeRange: q.timeRange, generatedAt: new Date(q.now).toISOString(),
    metrics: {}, health: {}, posture: {}, timeline: [], actorNames: {},
  };
  switch (q.metricType) {
    case 'overview': {
      const [byType, actors, incidents, policies, denials] = await Promise.all([
        auditCountsByType(db, orgId, since), distinctAuditActors(db, orgId, since), incidentFigures(db, orgId, since),
        countPoliciesByStatus(db, orgId), denialFigures(db, orgId, since),
      ]);
      const sum = (pred: (type: string) => boolean) => Object.entries(byType).filter(([t]) => pred(t)).reduce((a, [, n]) => a + n, 0);
      return {
        ...out,
        metrics: {
          auditEvents: sum(() => true),
          auditEventsByType: byType,
          distinctActors: actors,
          policyChanges: sum((t) => t.startsWith('policy.')),
          webhookRejections: byType['incident.webhook_rejected'] ?? 0,
          incidentsOpened: incidents.createdInWindow,
          incidentsResolved: incidents.resolvedInWindow,
          openIncidents: incidents.open,
          meanTimeToResolveMs: incidents.meanTimeToResolveMs,
          activePolicies: policies.active,
          authorizationDenials: denials.total,
          authorizationDenialsByAction: denials.byAction,
          authorizationDenialsByPrincipalKind: denials.byPrincipalKind,
          policyEvaluationErrors: denials.evaluationErrors,
        },
      };
    }
    case 'health': {
      const [chain, incidents, byType] = await Promise.all([
        verifyAudit(db, orgId), incidentFigures(db, orgId, since), auditCountsByType(db, orgId, since),
      ]);
      const rejections = byType['incident.webhook_rejected'] ?? 0;
      const critical = Object.entries(incidents.openBySeverity).some(([s, n]) => n > 0 && /critical|sev ?1|p1/i.test(s));
      const status = !chain.valid || critical ? 'critical' : incidents.open > 0 || rejections > 0 ? 'degraded' : 'healthy';
      return {
        ...out,
        health: {
          status,
          auditChain: chain,
          openIncidents: incidents.open,
          openIncidentsBySeverity: incidents.openBySeverity,
          webhookRejections: rejections,
        },
      };
    }
    case 'timeline': {
      const limit = Math.min(q.limit, TIMELINE_MAX_ROWS);
      const [audit, denials] = await Promise.all([auditTimeline(db, orgId, since, limit), denialTimeline(db, orgId, since, limit)]);
      const rows: Array<Record<string, unknown> & { at: string; actor: string }> = [
        ...audit.map((r) => ({ source: 'audit', ...r })),
        ...denials.map((d) => ({
          source: 'denial', seq: null, at: d.at, type: 'authz.denied', actor: d.principalId, subject: d.resourceType,
          principalKind: d.principalKind, action: d.action, determiningPolicies: d.determiningPolicies, evaluationError: d.evaluationError,
        })),
      ];
      // Newest first; a stable sort keeps each source's own order among equal times.
      const timeline = rows.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).slice(0, limit);
      const actorNames = await userNames(db, orgId, [...new Set(timeline.map((r) => r.actor))]);
      return { ...out, timeline, actorNames };
    }
    case 'posture': {
      const [policies, tags, connection, denials] = await Promise.all([
        countPoliciesByStatus(db, orgId), activePolicyTags(db, orgId), incidentIoConnection(db, orgId), denialFigures(db, orgId, since),
      ]);
      return {
        ...out,
        posture: {
          policies, regulatoryTagsCovered: tags, incidentIo: connection,
          denials: { total: denials.total, evaluationErrors: denials.evaluationErrors, topDeterminingPolicies: denials.topDeterminingPolicies },
        },
      };
    }
  }
}
