import type { Deps } from '../../actors/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { PROVIDER_WEBHOOK_MAX_BYTES, receiveProviderWebhook, webhookSealContext } from '../../actors/integrations/webhooks/ingest.js';
import { isWebhookProvider } from '../../actors/integrations/webhooks/providers.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { connectProviderIntegration } from '../../storage/integrations/provider-integrations.js';
import {
  providerIntegrationBody, providerIntegrationReply, providerWebhookQuery, providerWebhookReply,
} from '../../schemas/integrations/webhooks.js';
import type { Route } from '../types.js';

/**
 * Provider webhooks (spec 4.7, 6.3; CONTRACT "Provider webhooks"; decision 0014): an org connects a provider by
 * storing its signing secret, and the provider posts signed events to one unified ingest path. The literal
 * incident-io paths (governance) are registered beside these; uWS matches a literal segment before a parameter.
 */
export function providerWebhookRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'put', path: '/api/org/:orgId/integrations/:provider', auth: 'org', tags: ['integrations', 'webhooks'],
      summary: 'Connect a webhook provider (linear, github, circleci, vercel): its signing secret, encrypted at rest, and the project its events dispatch into (admin/owner)',
      bodySchema: providerIntegrationBody, responseSchema: providerIntegrationReply,
      authorize: {
        async find(req, _deps, p) {
          assertOwnOrg(req, p);
          const provider = req.params.provider ?? '';
          if (!isWebhookProvider(provider)) throw new TroupeError('NOT_FOUND', 'unknown integration provider');
          return provider;
        },
        action: 'manage-credentials',
        resource: (_req, p, provider) => ({ type: 'Integration', id: provider, orgId: p.orgId }),
      },
      async handler(req, deps, { found: provider }) {
        const p = orgPrincipal(req);
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
    }),
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
