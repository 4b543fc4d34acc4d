import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { PROVIDER_WEBHOOK_MAX_BYTES, receiveProviderWebhook, webhookSealContext } from '../../actors/services/integrations/webhooks/ingest.js';
import { isWebhookProvider, type WebhookProvider } from '../../actors/services/integrations/webhooks/providers.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';
import { route } from '../route.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { connectProviderIntegration, readProviderIntegration } from '../../storage/integrations/provider-integrations.js';
import { accountIdsOf } from '../../storage/integrations/provider-accounts.js';
import {
  providerIntegrationBody, providerIntegrationReply, providerWebhookQuery, providerWebhookReply,
} from '../../schemas/integrations/webhooks.js';
import type { HttpRequest, Route } from '../types.js';
import type { OrgPrincipal } from '../../actors/services/identity/principal.js';

/**
 * Provider webhooks (spec 4.7, 6.3; CONTRACT "Provider webhooks"; decision 0014): an org connects a provider by
 * storing its signing secret, and the provider posts signed events to one unified ingest path, routed by `?org=` or
 * by the provider account ids the org registered (decision 0070). The literal incident-io paths (governance) are
 * registered beside these; uWS matches a literal segment before a parameter.
 */

/** The tenancy step of both integration routes: the caller's own org, and one of the four providers. */
async function ownProvider(req: HttpRequest, _deps: Deps, p: OrgPrincipal): Promise<WebhookProvider> {
  assertOwnOrg(req, p);
  const provider = req.params.provider ?? '';
  if (!isWebhookProvider(provider)) throw new TroupeError('NOT_FOUND', 'unknown integration provider');
  return provider;
}

const integrationView = (orgId: string, provider: WebhookProvider, projectId: string | null, accountIds: readonly string[], updatedAt: Date) => ({
  orgId, provider, connected: true as const, projectId, webhookUrl: `/api/webhooks/ingest/${provider}?org=${orgId}`,
  accountIds: [...accountIds], updatedAt: updatedAt.toISOString(),
});

export function providerWebhookRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'put', path: '/api/org/:orgId/integrations/:provider', auth: 'org', tags: ['integrations', 'webhooks'],
      summary: "Connect a webhook provider (linear, github, circleci, vercel): its signing secret, encrypted at rest, the project its events dispatch into, and the provider's account ids that route a delivery here without ?org= (admin/owner; 409 when an account id already has the most orgs one id may have)",
      bodySchema: providerIntegrationBody, responseSchema: providerIntegrationReply,
      authorize: {
        find: ownProvider,
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
        const accountIds = req.body.accountIds;
        await connectProviderIntegration(deps.db, {
          orgId: p.orgId, provider, sealedSecret, projectId, ...(accountIds === undefined ? {} : { accountIds }), updatedBy: requesterOf(p), at: now,
        }, {
          orgId: p.orgId, type: 'integration.connected', actor: requesterOf(p), subject: provider,
          payload: accountIds === undefined ? { projectId } : { projectId, accountIds }, at: now,
        });
        return { body: integrationView(p.orgId, provider, projectId, await accountIdsOf(deps.db, p.orgId, provider), now) };
      },
    }),
    route({
      method: 'get', path: '/api/org/:orgId/integrations/:provider', auth: 'org', tags: ['integrations', 'webhooks'],
      summary: "An org's connection to a webhook provider: its project, webhook URL and registered account ids, never its secret (404 when not connected)",
      responseSchema: providerIntegrationReply,
      authorize: {
        find: ownProvider,
        action: 'read',
        resource: (_req, p, provider) => ({ type: 'Integration', id: provider, orgId: p.orgId }),
      },
      async handler(req, deps, { found: provider }) {
        const p = orgPrincipal(req);
        const integration = await readProviderIntegration(deps.db, p.orgId, provider);
        if (!integration) throw new TroupeError('NOT_FOUND', `this org has not connected ${provider}`);
        return { body: integrationView(p.orgId, provider, integration.projectId, await accountIdsOf(deps.db, p.orgId, provider), integration.updatedAt) };
      },
    }),
    {
      method: 'post', path: '/api/webhooks/ingest/:provider', auth: 'none', tags: ['integrations', 'webhooks'],
      summary: "Unified provider webhook for the org the URL names (?org=, as the integration's webhookUrl has it) or, without it, for the org that registered the provider account the delivery comes from (accountIds; decision 0070), verified with that org's secret and the provider's own signature on the raw body; 200 at once, routing deferred; a repeated delivery id or signed body answers duplicate: true. 400 malformed org, 401 bad signature, org not connected or account registered by no org, 404 unknown provider, 413 over 1 MiB, 429 too many refused deliveries from this address",
      bodyKind: 'raw', bodyLimit: PROVIDER_WEBHOOK_MAX_BYTES, querySchema: providerWebhookQuery, responseSchema: providerWebhookReply, limitsSource: true,
      async handler(req, deps) {
        return {
          body: await receiveProviderWebhook(deps, {
            provider: req.params.provider ?? '', headers: req.headers, rawBody: req.rawBody,
            orgId: req.query.get('org') ?? undefined, source: req.clientAddress(), requestId: req.requestId,
          }),
        };
      },
    },
  ];
}
