import type { Deps } from '../../actors/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgPrincipal } from '../../actors/identity/principal.js';
import { PROVIDER_WEBHOOK_MAX_BYTES, receiveProviderWebhook, webhookSealContext } from '../../actors/integrations/webhooks/ingest.js';
import { isWebhookProvider } from '../../actors/integrations/webhooks/providers.js';
import { requesterOf } from '../principal.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { connectProviderIntegration } from '../../storage/integrations/provider-integrations.js';
import {
  providerIntegrationBody, providerIntegrationReply, providerWebhookQuery, providerWebhookReply,
} from '../../schemas/integrations/webhooks.js';
import type { HttpRequest, Route } from '../types.js';

/**
 * Provider webhooks (spec 4.7, 6.3; CONTRACT "Provider webhooks"; decision 0014): an org connects a provider by
 * storing its signing secret, and the provider posts signed events to one unified ingest path. The literal
 * incident-io paths (governance) are registered beside these; uWS matches a literal segment before a parameter.
 */
function ownOrg(req: HttpRequest): OrgPrincipal {
  const p = req.principal;
  if (!p || p.kind === 'admin') throw new TroupeError('INTERNAL', 'route reached without an org principal');
  if (req.params.orgId !== p.orgId) throw new TroupeError('TENANT_MISMATCH');
  return p;
}

export function providerWebhookRoutes(): Route<Deps>[] {
  return [
    {
      method: 'put', path: '/api/org/:orgId/integrations/:provider', auth: 'org', tags: ['integrations', 'webhooks'],
      summary: 'Connect a webhook provider (linear, github, circleci, vercel): its signing secret, encrypted at rest, and the project its events dispatch into (admin/owner)',
      bodySchema: providerIntegrationBody, responseSchema: providerIntegrationReply,
      async handler(req: HttpRequest<{ signingSecret: string; projectId?: string }>, deps) {
        const p = ownOrg(req);
        const provider = req.params.provider ?? '';
        if (!isWebhookProvider(provider)) throw new TroupeError('NOT_FOUND', 'unknown integration provider');
        await deps.authz.authorize(p, 'manage-credentials', { type: 'Integration', id: provider, orgId: p.orgId });
        const projectId = req.body.projectId ?? null;
        if (projectId !== null && !(await projectsInOrg(deps.db, p.orgId, [projectId])).has(projectId)) {
          throw new TroupeError('VALIDATION_FAILED', 'projectId: no such project in this org', { field: 'projectId' });
        }
        const now = new Date(deps.clock.now());
        const sealedSecret = deps.secrets.seal(req.body.signingSecret, webhookSealContext(p.orgId, provider));
        await connectProviderIntegration(deps.db, { orgId: p.orgId, provider, sealedSecret, projectId, updatedBy: requesterOf(p), at: now }, {
          orgId: p.orgId, type: 'integration.connected', actor: requesterOf(p), subject: provider, payload: { projectId }, at: now,
        });
        return {
          body: {
            orgId: p.orgId, provider, connected: true, projectId,
            webhookUrl: `/api/webhooks/ingest/${provider}?org=${p.orgId}`, updatedAt: now.toISOString(),
          },
        };
      },
    },
    {
      method: 'post', path: '/api/webhooks/ingest/:provider', auth: 'none', tags: ['integrations', 'webhooks'],
      summary: "Unified provider webhook for the org the URL names (?org=, as the integration's webhookUrl has it), verified with that org's secret and the provider's own signature on the raw body; 200 at once, routing deferred; a repeated delivery id or signed body answers duplicate: true. 400 no org, 401 bad signature or org not connected, 404 unknown provider, 413 over 1 MiB, 429 too many refused deliveries from this address",
      bodyKind: 'raw', bodyLimit: PROVIDER_WEBHOOK_MAX_BYTES, querySchema: providerWebhookQuery, responseSchema: providerWebhookReply, limitsSource: true,
      async handler(req, deps) {
        return {
          body: await receiveProviderWebhook(deps, {
            provider: req.params.provider ?? '', headers: req.headers, rawBody: req.rawBody,
            orgId: req.query.get('org') ?? '', source: req.clientAddress(), requestId: req.requestId,
          }),
        };
      },
    },
  ];
}
