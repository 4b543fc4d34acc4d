import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import { isOAuthProvider, oauthAppFor, oauthProviders, type OAuthProvider } from '../../actors/services/integrations/oauth/index.js';
import { webhookProviders } from '../../actors/services/integrations/webhooks/providers.js';
import type { Route } from '../types.js';
import { route } from '../route.js';
import { deleteOAuthConnection, listOAuthConnections, listWebhookIntegrations } from '../../storage/integrations/oauth-connections.js';
import { disconnectedReply, integrationsReply } from '../../schemas/integrations/admin-http.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';

/**
 * The org's integrations in one place (issue 37 §2): what the console's integrations page lists, and the removal of
 * an OAuth connection. Connecting stays with integration-oauth.ts and webhook secrets with provider-webhooks.ts.
 * Reading is anyone's in the org (as the single provider's GET is); disconnecting is `manage-credentials`.
 */
export function integrationAdminRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/org/:orgId/integrations', auth: 'org', tags: ['integrations'],
      summary: "The org's integrations: each OAuth provider with whether this deployment can connect it and the org's connection, "
        + "and each webhook provider with whether its signing secret is stored and its webhook URL. orgId must be the caller's org (403 TENANT_MISMATCH otherwise)",
      responseSchema: integrationsReply,
      authorize: {
        find: async (req, _deps, p) => { assertOwnOrg(req, p); },
        action: 'read',
        resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }),
      },
      async handler(req, deps) {
        const orgId = orgPrincipal(req).orgId;
        const [connections, webhooks] = await Promise.all([listOAuthConnections(deps.db, orgId), listWebhookIntegrations(deps.db, orgId)]);
        return {
          body: {
            oauth: oauthProviders.map((provider) => {
              const c = connections.find((x) => x.provider === provider);
              return {
                provider, configured: oauthAppFor(deps.config, provider) !== undefined,
                connection: c ? { status: c.status, scope: c.scope, connectedBy: c.connectedBy, connectedAt: c.connectedAt, expiresAt: c.expiresAt } : null,
              };
            }),
            webhooks: webhookProviders.map((provider) => {
              const w = webhooks.find((x) => x.provider === provider);
              return {
                provider, connected: w !== undefined, webhookUrl: `/api/webhooks/ingest/${provider}?org=${orgId}`,
                projectId: w?.projectId ?? null, updatedAt: w?.updatedAt ?? null,
              };
            }),
          },
        };
      },
    }),
    route({
      method: 'delete', path: '/api/integrations/:provider/oauth', auth: 'org', tags: ['integrations'],
      summary: "Disconnect an OAuth provider from the caller's org: its stored tokens are forgotten (admin/owner); 404 when it is not connected or the provider is unknown",
      responseSchema: disconnectedReply,
      authorize: {
        async find(req): Promise<OAuthProvider> {
          const provider = req.params.provider ?? '';
          if (!isOAuthProvider(provider)) throw new TroupeError('NOT_FOUND', 'unknown OAuth provider');
          return provider;
        },
        action: 'manage-credentials',
        resource: (_req, p, provider) => ({ type: 'Integration', id: provider, orgId: p.orgId }),
      },
      async handler(req, deps, { found: provider }) {
        const p = orgPrincipal(req);
        const removed = await deleteOAuthConnection(deps.db, p.orgId, provider, {
          orgId: p.orgId, type: 'integration.oauth_disconnected', actor: requesterOf(p), subject: provider, payload: {}, at: new Date(deps.clock.now()),
        });
        if (!removed) throw new TroupeError('NOT_FOUND', `this org has not connected ${provider}`);
        return { body: { provider, connected: false as const } };
      },
    }),
  ];
}
