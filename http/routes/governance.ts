import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Principal } from '../../actors/services/identity/principal.js';
import { assertValidCedar } from '../../actors/kinds/policy/cedar-text.js';
import { policyAddress } from '../../actors/kinds/policy/actor.js';
import { announcePolicyChange } from '../../actors/kinds/policy/enforcement.js';
import type { PolicyMsg, PolicyReply } from '../../actors/kinds/policy/machine.js';
import { WebhookRefusal } from '../../actors/services/governance/standard-webhooks.js';
import {
  INCIDENT_IO_PROVIDER, INCIDENT_WEBHOOK_MAX_BYTES, receiveIncidentIoWebhook, sealContext,
} from '../../actors/services/governance/incident-webhook.js';
import { securityMetrics, type MetricType, type TimeRange } from '../../actors/services/governance/security-metrics.js';
import {
  createPolicyBody, listPoliciesQuery, policyListReply, policyReply, policyWithVersionsReply, updatePolicyBody,
  type PolicyScope, type PolicyStatus,
} from '../../schemas/governance/policy.js';
import {
  incidentIoEnvironmentSecretBody, incidentIoEnvironmentSecretReply, incidentIoIntegrationBody, incidentIoIntegrationReply,
  incidentListReply, incidentWebhookQuery, incidentWebhookReply, listIncidentsQuery,
} from '../../schemas/governance/incident.js';
import { securityMetricsQuery, securityMetricsReply } from '../../schemas/governance/security-metrics.js';
import { findPolicy, listPolicies, listPolicyVersions, policyViewOf, type PolicyView } from '../../storage/governance/policies.js';
import { assignIncidentIoEnvironmentSecret, connectIncidentIo, listIncidents } from '../../storage/governance/incidents.js';
import { findOrg, projectsInOrg } from '../../storage/identity/orgs.js';
import { secretKey } from '../../actors/services/governance/standard-webhooks.js';
import type { Route } from '../types.js';
import { route } from '../route.js';

/**
 * Governance routes (decision 0009): stored Cedar policies with version history, incidents and the signed
 * incident.io webhook, security metrics. Policies, incidents and metrics are human-only (spec 5.1): the edge
 * answers 403 to API keys, machine and runtime tokens. Another org's policy is 404.
 */

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Human { readonly userId: string; readonly orgId: string; readonly principal: Principal }

function human(p: Principal): Human {
  // The edge enforces 'human'; this keeps the types honest and fails closed if a route is ever misdeclared.
  if (p.kind !== 'user') throw new TroupeError('AUTH_HUMAN_ONLY');
  return { userId: p.userId, orgId: p.orgId, principal: p };
}

/** A workspace id other than the caller's org is treated like any other org's resource: not found. */
function assertOwnWorkspace(h: Human, workspaceId: string | undefined | null): void {
  if (workspaceId !== undefined && workspaceId !== null && workspaceId !== h.orgId) throw new TroupeError('NOT_FOUND', 'workspace not found');
}

async function resolveScope(deps: Deps, h: Human, scope: PolicyScope, scopeId: string | undefined): Promise<{ scope: PolicyScope; scopeId: string }> {
  if (scope === 'workspace') return { scope, scopeId: h.orgId };
  if (scopeId === undefined) throw new TroupeError('VALIDATION_FAILED', 'scopeId: a project-scoped policy names its project', { field: 'scopeId' });
  const own = await projectsInOrg(deps.db, h.orgId, [scopeId]);
  if (!own.has(scopeId)) throw new TroupeError('VALIDATION_FAILED', 'scopeId: no such project in this workspace', { field: 'scopeId' });
  return { scope, scopeId };
}

/** The policy `:id` names in the caller's org, or 404 (an id that is no uuid cannot be one). */
async function scopedPolicy(deps: Deps, h: Human, id: string | undefined): Promise<PolicyView> {
  const policy = id !== undefined && uuidPattern.test(id) ? await findPolicy(deps.db, h.orgId, id) : undefined;
  if (!policy) throw new TroupeError('NOT_FOUND', 'policy not found');
  return policy;
}

const policyResource = (orgId: string, id: string, scope?: PolicyScope, scopeId?: string) =>
  ({ type: 'Policy', id, orgId, ...(scope === 'project' && scopeId ? { projectId: scopeId } : {}) });

async function announce(deps: Deps, orgId: string): Promise<void> {
  // The write is durable already; a lost announcement only delays enforcement by the memo TTL.
  await announcePolicyChange(deps, orgId).catch((err: unknown) => deps.log.warn({ err, orgId }, 'could not announce a policy change'));
}

const incidentWebhookUrl = (orgId: string): string => `/api/webhooks/ingest/incident-io?org=${orgId}`;

function assignEnvironmentSecret(deps: Deps, orgId: string | null): Promise<{ previousOrgId: string | null }> {
  const at = deps.clock.now();
  return assignIncidentIoEnvironmentSecret(deps.db, orgId, at, (affected, type) => ({
    orgId: affected, type, actor: 'platform-admin', subject: INCIDENT_IO_PROVIDER, payload: { assignedTo: orgId }, at: new Date(at),
  }));
}

export function governanceRoutes(): Route<Deps>[] {
  return [...policyRoutes(), ...incidentRoutes(), ...securityMetricRoutes()];
}

function policyRoutes(): Route<Deps>[] {
  return [...policyWriteRoutes(), ...policyReadRoutes()];
}

function policyWriteRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/policies', auth: 'human', tags: ['governance'], successStatus: 201,
      summary: 'Create a Cedar policy (validated against the Troupe Cedar schema); version 1 is recorded',
      bodySchema: createPolicyBody, responseSchema: policyReply,
      authorize: {
        async find(req, deps, p) {
          const h = human(p);
          assertOwnWorkspace(h, req.body.workspaceId);
          return { h, ...(await resolveScope(deps, h, req.body.scope ?? 'workspace', req.body.scopeId)) };
        },
        action: 'manage-policies',
        resource: (_req, _p, { h, scope, scopeId }) => policyResource(h.orgId, 'new', scope, scopeId),
      },
      async handler(req, deps, { found: { h, scope, scopeId } }) {
        const b = req.body;
        assertValidCedar(b.cedarPolicy);
        const id = randomUUID();
        const msg: PolicyMsg = {
          type: 'policy.create', orgId: h.orgId, versionId: randomUUID(), name: b.name, description: b.description ?? '',
          cedarPolicy: b.cedarPolicy, scope, scopeId, status: b.status ?? 'active', regulatoryTags: b.regulatoryTags ?? [],
          metadata: b.metadata ?? {}, createdBy: h.userId, changeReason: b.changeReason ?? '',
        };
        const reply = await deps.ask<PolicyReply>(policyAddress(id), msg);
        await announce(deps, h.orgId);
        return { status: 201, body: { policy: policyViewOf(reply.policy) } };
      },
    }),
    route({
      method: 'patch', path: '/api/policies/:id', auth: 'human', tags: ['governance'],
      summary: 'Change a policy; a new cedarPolicy appends an immutable version with changedBy and changeReason; status archived archives it',
      bodySchema: updatePolicyBody, responseSchema: policyReply,
      authorize: {
        async find(req, deps, p) {
          const h = human(p);
          const current = await scopedPolicy(deps, h, req.params.id);
          const b = req.body;
          const scope = b.scope ?? current.scope;
          const resolved = b.scope !== undefined || b.scopeId !== undefined
            ? await resolveScope(deps, h, scope, b.scopeId ?? (scope === current.scope ? current.scopeId : undefined))
            : { scope: current.scope, scopeId: current.scopeId };
          return { h, current, resolved };
        },
        action: 'manage-policies',
        resource: (req, _p, { h, current }) => policyResource(h.orgId, req.params.id ?? '', current.scope, current.scopeId),
      },
      async handler(req, deps, { found: { h, current, resolved } }) {
        const id = req.params.id ?? '';
        const b = req.body;
        // Both the policy's current and its new place must be the caller's to manage: the route declares the first,
        // and the second exists only when the body moves the policy, so it is asked here.
        if (resolved.scope !== current.scope || resolved.scopeId !== current.scopeId) {
          await deps.authz.authorize(h.principal, 'manage-policies', policyResource(h.orgId, id, resolved.scope, resolved.scopeId));
        }
        if (b.cedarPolicy !== undefined) assertValidCedar(b.cedarPolicy);
        const changes: Extract<PolicyMsg, { type: 'policy.update' }>['changes'] = {
          ...(b.name !== undefined ? { name: b.name } : {}),
          ...(b.description !== undefined ? { description: b.description } : {}),
          ...(b.cedarPolicy !== undefined ? { cedarPolicy: b.cedarPolicy } : {}),
          ...(b.regulatoryTags !== undefined ? { regulatoryTags: b.regulatoryTags } : {}),
          ...(b.metadata !== undefined ? { metadata: b.metadata } : {}),
          ...(b.status !== undefined ? { status: b.status } : {}),
          scope: resolved.scope, scopeId: resolved.scopeId,
        };
        const msg: PolicyMsg = {
          type: 'policy.update', orgId: h.orgId, versionId: randomUUID(), changes, changedBy: h.userId, changeReason: b.changeReason ?? '',
        };
        const reply = await deps.ask<PolicyReply>(policyAddress(id), msg);
        await announce(deps, h.orgId);
        return { body: { policy: policyViewOf(reply.policy) } };
      },
    }),
  ];
}

function policyReadRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/policies/:id', auth: 'human', tags: ['governance'],
      summary: 'A policy with its versions, newest first; another org\'s policy is 404',
      responseSchema: policyWithVersionsReply,
      authorize: {
        find: async (req, deps, p) => {
          const h = human(p);
          return { h, policy: await scopedPolicy(deps, h, req.params.id) };
        },
        action: 'read',
        resource: (req, _p, { h, policy }) => policyResource(h.orgId, req.params.id ?? '', policy.scope, policy.scopeId),
      },
      async handler(req, deps, { found: { h, policy } }) {
        return { body: { policy, versions: await listPolicyVersions(deps.db, h.orgId, req.params.id ?? '') } };
      },
    }),
    route({
      method: 'get', path: '/api/policies', auth: 'human', tags: ['governance'],
      summary: 'The workspace\'s policies, newest first, filtered by status and scope',
      querySchema: listPoliciesQuery, responseSchema: policyListReply,
      authorize: {
        find: async (req, _deps, p) => {
          const h = human(p);
          assertOwnWorkspace(h, req.query.get('workspaceId'));
          return h;
        },
        action: 'read',
        resource: (_req, _p, h) => policyResource(h.orgId, 'list'),
      },
      async handler(req, deps, { found: h }) {
        const status = req.query.get('status') as PolicyStatus | null;
        const scope = req.query.get('scope') as PolicyScope | null;
        const policies = await listPolicies(deps.db, h.orgId, {
          ...(status ? { status } : {}), ...(scope ? { scope } : {}),
          limit: Number(req.query.get('limit') ?? 100), offset: Number(req.query.get('offset') ?? 0),
        });
        return { body: { policies } };
      },
    }),
  ];
}

function incidentRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/incidents', auth: 'human', tags: ['governance'],
      summary: 'The org\'s incidents, newest first; status is a comma-separated list',
      querySchema: listIncidentsQuery, responseSchema: incidentListReply,
      authorize: {
        find: async (_req, _deps, p) => human(p),
        action: 'read',
        resource: (_req, _p, h) => ({ type: 'Incident', id: 'list', orgId: h.orgId }),
      },
      async handler(req, deps, { found: h }) {
        const statuses = (req.query.get('status') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
        const severity = req.query.get('severity');
        const source = req.query.get('source');
        const limit = Number(req.query.get('limit') ?? 50);
        const offset = Number(req.query.get('offset') ?? 0);
        const page = await listIncidents(deps.db, h.orgId, {
          ...(statuses.length > 0 ? { statuses } : {}), ...(severity ? { severity } : {}), ...(source ? { source } : {}), limit, offset,
        });
        return { body: { ...page, limit, offset } };
      },
    }),
    route({
      method: 'put', path: '/api/org/:orgId/integrations/incident-io', auth: 'human', tags: ['governance'],
      summary: 'Connect incident.io: store the org\'s whsec_ signing secret (encrypted at rest); the reply names the delivery URL (the legacy environment secret is the platform admin\'s to give)',
      bodySchema: incidentIoIntegrationBody, responseSchema: incidentIoIntegrationReply,
      authorize: {
        find: async (req, _deps, p) => {
          const h = human(p);
          // Another org's path is 404 here, not the TENANT_MISMATCH of assertOwnOrg: this route has always answered so.
          if (req.params.orgId !== h.orgId) throw new TroupeError('NOT_FOUND', 'org not found');
          return h;
        },
        action: 'manage-credentials',
        resource: (_req, _p, h) => ({ type: 'Integration', id: INCIDENT_IO_PROVIDER, orgId: h.orgId }),
      },
      async handler(req, deps, { found: h }) {
        const secret = req.body.signingSecret;
        if (!secretKey(secret)) {
          throw new TroupeError('VALIDATION_FAILED', 'signingSecret: must be whsec_ followed by base64 of at least 16 bytes', { field: 'signingSecret' });
        }
        const now = deps.clock.now();
        const sealedSecret = deps.secrets.seal(secret, sealContext(h.orgId));
        await connectIncidentIo(deps.db, { orgId: h.orgId, sealedSecret, updatedBy: h.userId, at: now }, {
          orgId: h.orgId, type: 'integration.connected', actor: h.userId, subject: INCIDENT_IO_PROVIDER,
          payload: { secretSource: 'org' }, at: new Date(now),
        });
        return {
          body: {
            orgId: h.orgId, provider: INCIDENT_IO_PROVIDER, connected: true, secretSource: 'org',
            updatedAt: new Date(now).toISOString(), webhookUrl: incidentWebhookUrl(h.orgId),
          },
        };
      },
    }),
    {
      method: 'post', path: '/api/webhooks/ingest/incident-io', auth: 'none', tags: ['governance', 'webhooks'],
      summary: 'incident.io webhook, verified as Standard Webhooks; every verification failure (including over 1 MiB and a repeated webhook-id) is 401',
      bodyKind: 'raw', bodyLimit: INCIDENT_WEBHOOK_MAX_BYTES, bodyTooLarge: 'AUTH_INVALID', responseSchema: incidentWebhookReply,
      querySchema: incidentWebhookQuery, limitsSource: true,
      async handler(req, deps) {
        try {
          const input = { headers: req.headers, rawBody: req.rawBody, orgId: req.query.get('org') ?? undefined, source: req.clientAddress() };
          return { body: await receiveIncidentIoWebhook(deps, input) };
        } catch (err) {
          if (err instanceof WebhookRefusal) {
            // The reason stays in our logs and the org's audit chain; the sender learns only that it was refused.
            throw new TroupeError('AUTH_INVALID', 'webhook signature is missing, stale, malformed, replayed or unverifiable');
          }
          throw err;
        }
      },
    },
    route({
      method: 'put', path: '/api/admin/integrations/incident-io/environment-secret', auth: 'admin', tags: ['governance', 'admin'],
      summary: 'Give the legacy TROUPE_INCIDENT_IO_SECRET to one org (taking it from any other); that org\'s deliveries are verified with it',
      bodySchema: incidentIoEnvironmentSecretBody, responseSchema: incidentIoEnvironmentSecretReply,
      async handler(req, deps) {
        if (deps.config.incidentIoSecret === undefined) {
          throw new TroupeError('CONFLICT', 'TROUPE_INCIDENT_IO_SECRET is not set on this deployment');
        }
        if (!(await findOrg(deps.db, req.body.orgId))) throw new TroupeError('NOT_FOUND', 'org not found');
        const { previousOrgId } = await assignEnvironmentSecret(deps, req.body.orgId);
        return { body: { orgId: req.body.orgId, previousOrgId, webhookUrl: incidentWebhookUrl(req.body.orgId) } };
      },
    }),
    {
      method: 'delete', path: '/api/admin/integrations/incident-io/environment-secret', auth: 'admin', tags: ['governance', 'admin'],
      summary: 'Take the legacy TROUPE_INCIDENT_IO_SECRET from whichever org has it',
      responseSchema: incidentIoEnvironmentSecretReply,
      async handler(_req, deps) {
        const { previousOrgId } = await assignEnvironmentSecret(deps, null);
        return { body: { orgId: null, previousOrgId, webhookUrl: null } };
      },
    },
  ];
}

function securityMetricRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/security/metrics', auth: 'human', tags: ['governance'],
      summary: 'Security metrics from the audit chain, incidents and policies; metricType overview|health|timeline|posture, timeRange 24h|7d|30d|90d, limit ≤ 100 timeline rows',
      querySchema: securityMetricsQuery, responseSchema: securityMetricsReply,
      authorize: {
        find: async (_req, _deps, p) => human(p),
        action: 'read',
        resource: (_req, _p, h) => ({ type: 'Audit', id: 'security-metrics', orgId: h.orgId }),
      },
      async handler(req, deps, { found: h }) {
        return {
          body: await securityMetrics(deps.db, h.orgId, {
            metricType: (req.query.get('metricType') ?? 'overview') as MetricType,
            timeRange: (req.query.get('timeRange') ?? '30d') as TimeRange,
            limit: Number(req.query.get('limit') ?? 100),
            now: deps.clock.now(),
          }),
        };
      },
    }),
  ];
}
