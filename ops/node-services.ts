import type { Deps } from '../actors/services/deps.js';
import type { NodeServices } from '../actors/services/node-services.js';
import type { SigningKeys } from '../actors/services/identity/tokens.js';
import { createDaemonServices } from '../actors/services/daemon/services.js';
import { createCredentialServices } from '../actors/services/credentials/rotation.js';
import { createNodeStreams } from '../actors/services/fleet/node-streams.js';
import { createInterviewBatcher } from '../actors/services/interview/batcher.js';
import { TranscriptFollowers } from '../actors/services/transcripts/followers.js';
import { ApprovalWaits } from '../actors/services/governance/approval-waits.js';
import { TranscriptRetentionSweeper } from '../actors/services/transcripts/retention-sweeper.js';
import { createWorkerStreams } from '../actors/services/fleet/worker-streams.js';
import { OutboundGuard } from '../actors/services/integrations/outbound/guarded-request.js';
import { VapidKeyStore } from '../actors/services/integrations/web-push/vapid.js';
import { ConnectionTokenRefreshes } from '../actors/services/integrations/oauth/connection-token.js';
import { WebhookSweeper } from '../actors/services/integrations/webhooks/sweeper.js';
import type { PushOnEvents } from '../actors/services/integrations/web-push/event-notifications.js';
import type { StoredPolicySource } from '../actors/kinds/policy/enforcement.js';
import { NodeDrain } from '../actors/services/node-drain.js';
import type { WorkflowSchedules } from '../actors/services/schedules/service.js';
import { TrackerOutbox } from '../actors/services/integrations/trackers/outbox.js';
import { PullRequestOutbox } from '../actors/services/integrations/pull-requests/outbox.js';
import type { AuditOutbox } from '../actors/services/audit/outbox-drain.js';
import { createRateLimits } from '../storage/rate-limits.js';
import type { RedisCache } from '../storage/redis-cache.js';

/** What the node made before its services: they share it (the keys with the authenticator, the rest with the actors). */
export interface ServiceParts {
  readonly keys: SigningKeys;
  readonly policies: StoredPolicySource;
  readonly pushOnEvents: PushOnEvents;
  readonly audit: AuditOutbox;
  readonly schedules: WorkflowSchedules;
  readonly cluster: NodeServices['cluster'];
  /** The cache's Redis connection when the node has one: rate limits share it. */
  readonly redis?: RedisCache['client'];
}

/**
 * Builds the node's services (actors/services/node-services.ts) once, from the node's dependencies without them. Nothing
 * starts here: ops/node.ts starts the ones with a life in `lifecycleOf` order and stops them on the way down.
 */
export function buildNodeServices(base: Omit<Deps, 'services'>, parts: ServiceParts): NodeServices {
  const streams = createNodeStreams(base);
  return {
    keys: parts.keys,
    outbound: new OutboundGuard(base.config.outboundAllow),
    policies: parts.policies,
    daemon: createDaemonServices(base, parts.keys),
    streams,
    credentials: createCredentialServices(base, streams),
    interviews: createInterviewBatcher(base),
    transcripts: new TranscriptFollowers(base.transport, base.log.child({ component: 'transcript-followers' })),
    approvalWaits: new ApprovalWaits(base.transport, base.log.child({ component: 'approval-waits' })),
    transcriptRetention: new TranscriptRetentionSweeper(),
    workers: createWorkerStreams(base),
    vapid: new VapidKeyStore(base),
    connectionTokens: new ConnectionTokenRefreshes(),
    pushOnEvents: parts.pushOnEvents,
    webhookSweeper: new WebhookSweeper(),
    audit: parts.audit,
    drain: new NodeDrain(),
    schedules: parts.schedules,
    trackerOutbox: new TrackerOutbox(),
    pullRequestOutbox: new PullRequestOutbox(),
    rateLimits: createRateLimits(
      {
        writesPerMinute: base.config.rateLimitWritesPerMinute, dispatchesPerMinute: base.config.rateLimitDispatchesPerMinute,
        loginFailuresPerEmailPerHour: base.config.rateLimitLoginFailuresPerEmailPerHour,
        webhookFailuresPerMinute: base.config.rateLimitWebhookFailuresPerMinute,
        workerOutputBytesPerMinute: base.config.rateLimitWorkerOutputBytesPerMinute,
        webhookDeliveriesPerMinute: base.config.rateLimitWebhookDeliveriesPerMinute,
        workerHeartbeatsPerMinute: base.config.rateLimitWorkerHeartbeatsPerMinute,
        workerReportsPerMinute: base.config.rateLimitWorkerReportsPerMinute,
        ssoStartsPerSourcePerMinute: base.config.rateLimitSsoStartsPerSourcePerMinute,
      },
      parts.redis,
    ),
    cluster: parts.cluster,
  };
}
