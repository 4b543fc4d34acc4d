import type { Deps } from '../actors/services/deps.js';
import { healthRoutes } from './routes/health.js';
import { identityRoutes } from './routes/identity.js';
import { workflowRoutes } from './routes/workflows.js';
import { approvalRoutes } from './routes/approvals.js';
import { auditRoutes } from './routes/audit.js';
import { openApiRoute } from './routes/openapi.js';
import { readinessProbesFor } from './routes/readiness.js';
import { sessionRoutes } from './routes/sessions.js';
import { daemonRoutes } from './routes/daemon.js';
import { governanceRoutes } from './routes/governance.js';
import { analyticsRoutes } from './routes/analytics.js';
import { authoringRoutes } from './routes/authoring.js';
import { providerWebhookRoutes } from './routes/provider-webhooks.js';
import { requesterRoutes } from './routes/requesters.js';
import { repositoryRoutes } from './routes/repositories.js';
import { oauthRoutes } from './routes/oauth.js';
import { m2mClientRoutes } from './routes/m2m-clients.js';
import { credentialRoutes } from './routes/credentials.js';
import { pluginOptionRoutes } from './routes/plugin-options.js';
import { streamRoutes } from './routes/streams.js';
import { workerProtocolRoutes } from './routes/worker-protocol.js';
import { fleetRoutes } from './routes/fleet.js';
import { clusterRoutes } from './routes/cluster.js';
import { deadLetterRoutes } from './routes/dead-letters.js';
import { agentCardRoutes } from './routes/agent-cards.js';
import { a2aRoutes } from './routes/a2a.js';
import { templateRoutes } from './routes/templates.js';
import { webPushRoutes } from './routes/web-push.js';
import { integrationOAuthRoutes } from './routes/integration-oauth.js';
import { integrationAdminRoutes } from './routes/integration-admin.js';
import { authSessionRoute } from './routes/auth-session.js';
import { queueControlRoutes } from './routes/queue-control.js';
import { budgetRoutes } from './routes/budgets.js';
import { concurrencyControlRoutes } from './routes/concurrency-control.js';
import { workerControlRoutes } from './routes/worker-control.js';
import { scheduleControlRoutes } from './routes/schedule-control.js';
import { ssoSettingsRoutes } from './routes/sso.js';
import { ssoSignInRoutes } from './routes/sso-sign-in.js';
import { ssoDomainRoutes } from './routes/sso-domains.js';
import { transcriptRoutes } from './routes/transcripts.js';
import { orgSettingsRoutes } from './routes/org-settings.js';
import { sessionAgentLineRoutes } from './routes/session-agent-line.js';
import type { Route } from './types.js';

/**
 * The node's whole route table. Each room adds its module's routes here (one spread per module); the OpenAPI
 * document is built from exactly this list.
 */
export function allRoutes(): Route<Deps>[] {
  const routes: Route<Deps>[] = [
    ...healthRoutes<Deps>(readinessProbesFor),
    openApiRoute<Deps>(() => routes),
    ...governanceRoutes(),
    ...providerWebhookRoutes(),
    ...requesterRoutes(),
    ...oauthRoutes(),
    ...m2mClientRoutes(),
    ...identityRoutes(),
    ...sessionRoutes(),
    ...repositoryRoutes(),
    ...daemonRoutes(),
    ...workerProtocolRoutes(),
    ...workflowRoutes(),
    ...approvalRoutes(),
    ...templateRoutes(),
    ...auditRoutes(),
    ...analyticsRoutes(),
    ...clusterRoutes(),
    ...deadLetterRoutes(),
    ...authoringRoutes(),
    ...credentialRoutes(),
    ...pluginOptionRoutes(),
    ...streamRoutes(),
    ...fleetRoutes(),
    ...agentCardRoutes(),
    ...a2aRoutes(),
    ...webPushRoutes(),
    ...integrationOAuthRoutes(),
    ...integrationAdminRoutes(),
    ...queueControlRoutes(),
    ...budgetRoutes(),
    ...concurrencyControlRoutes(),
    ...workerControlRoutes(),
    ...scheduleControlRoutes(),
    authSessionRoute(),
    ...transcriptRoutes(),
    ...orgSettingsRoutes(),
    ...sessionAgentLineRoutes(),
    ...ssoSettingsRoutes(),
    ...ssoSignInRoutes(),
    ...ssoDomainRoutes(),
  ];
  return routes;
}
