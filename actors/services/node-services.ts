import type { ClusterStatus } from '../../transport/cluster/index.js';
import type { NodeServices } from './deps.js';
import type { NodeService } from './node-service.js';
import type { SigningKeys } from './identity/tokens.js';
import type { DaemonServices } from './daemon/services.js';
import type { CredentialServices } from './credentials/rotation.js';
import type { NodeStreams } from './fleet/node-streams.js';
import type { InterviewBatcher } from './interview/batcher.js';
import type { TranscriptFollowers } from './transcripts/followers.js';
import type { ApprovalWaits } from './governance/approval-waits.js';
import type { TranscriptRetentionSweeper } from './transcripts/retention-sweeper.js';
import type { WorkerStreams } from './fleet/worker-streams.js';
import type { OutboundGuard } from './integrations/outbound/guarded-request.js';
import type { VapidKeyStore } from './integrations/web-push/vapid.js';
import type { PushOnEvents } from './integrations/web-push/event-notifications.js';
import type { ConnectionTokenRefreshes } from './integrations/oauth/connection-token.js';
import type { WebhookSweeper } from './integrations/webhooks/sweeper.js';
import type { StoredPolicySource } from '../kinds/policy/enforcement.js';
import type { NodeDrain } from './node-drain.js';
import type { WorkflowSchedules } from './schedules/service.js';
import type { TrackerOutbox } from './integrations/trackers/outbox.js';
import type { PullRequestOutbox } from './integrations/pull-requests/outbox.js';
import type { AuditOutbox } from './audit/outbox-drain.js';
import type { RateLimits } from '../../storage/rate-limits.js';

export type { NodeServices } from './deps.js';
export type { NodeService } from './node-service.js';

/**
 * The node's long-lived, in-memory machinery: one instance of each per node, built once by the composition root
 * (ops/node-services.ts) and reached by handlers and effects as `deps.services`. Nothing of this lives in module
 * state, so several nodes in one process (the tests, the cluster suite) never share any of it.
 *
 * A service that owns timers or subscriptions is also a `NodeService`: building it starts nothing; the node starts it
 * once the transport runs and before HTTP accepts requests, and stops it after HTTP has drained and before the
 * transport and the actor system stop, so `stop` can still flush to storage and reach actors.
 */
declare module './deps.js' {
  // Declared here, member by member, rather than in ./deps.ts: every service imports Deps, and Deps imports none of them.
  interface NodeServices {
    /** The token signing keys, derived from the master key once per node. */
    readonly keys: SigningKeys;
    /** Outbound HTTP(S) through the SSRF guard (`TROUPE_OUTBOUND_ALLOW` read once). */
    readonly outbound: OutboundGuard;
    /** The stored Cedar policies joined to every decision, memoised per org and project. */
    readonly policies: StoredPolicySource & NodeService;
    /** Liveness and step-heartbeat writers, the pending-mutation index and the lease sweeper. */
    readonly daemon: DaemonServices & NodeService;
    /** This node's fan-out of session, interview and credential events to its SSE subscribers. */
    readonly streams: NodeStreams & NodeService;
    /** Credential rotation: presence of rotate-stream subscribers and the sealed fan-out. */
    readonly credentials: CredentialServices & NodeService;
    /** Interview token deltas, batched into frames. */
    readonly interviews: InterviewBatcher & NodeService;
    /** Who follows which session's transcript on this node, and the nudges that wake them (decision 0084). */
    readonly transcripts: TranscriptFollowers & NodeService;
    /** Agents waiting on this node for a person's decision, woken by decisions and session changes (decision 0088). */
    readonly approvalWaits: ApprovalWaits & NodeService;
    /** Deletes transcripts older than their org's retention, in small batches. */
    readonly transcriptRetention: TranscriptRetentionSweeper & NodeService;
    /** Workers connected to this node's daemon event stream, and the offers, stops and nudges sent to them. */
    readonly workers: WorkerStreams;
    /** The deployment's VAPID key pair, loaded (or made) once. */
    readonly vapid: VapidKeyStore;
    /** Single-flight refreshes of integration OAuth tokens. */
    readonly connectionTokens: ConnectionTokenRefreshes;
    /** Web push on opened gates and ended sessions. */
    readonly pushOnEvents: PushOnEvents & NodeService;
    /** Re-drives provider deliveries left unfinished. */
    readonly webhookSweeper: WebhookSweeper & NodeService;
    /** Audit entries recorded off the request path and moved into the chain by a drain (decision 0041). */
    readonly audit: AuditOutbox & NodeService;
    /** Set when the node begins to shut down; readiness reads it. */
    readonly drain: NodeDrain;
    /** Schedule triggers: timers for the fires this node decides, and the scan for overdue fires and deployments. */
    readonly schedules: WorkflowSchedules;
    /** Posts the comments session ends owe their tracker issues (Linear, GitHub). */
    readonly trackerOutbox: TrackerOutbox;
    /** Opens the pull requests completed runs owe their GitHub repositories. */
    readonly pullRequestOutbox: PullRequestOutbox;
    /** Per-credential, per-login and per-source rate limits (decision 0026). */
    readonly rateLimits: RateLimits;
    /** Cluster membership and shard placement; absent on a node without a broker. */
    readonly cluster: { status(): ClusterStatus } | undefined;
  }
}


/** The services with a life, in start order (the node stops them in reverse). */
export function lifecycleOf(services: NodeServices): NodeService[] {
  // The audit outbox starts first and stops last: every other service may still record an entry while it stops.
  return [
    services.audit, services.policies, services.streams, services.workers, services.daemon, services.credentials, services.interviews,
    services.pushOnEvents, services.webhookSweeper, services.schedules, services.trackerOutbox,
    services.pullRequestOutbox, services.transcripts, services.approvalWaits, services.transcriptRetention,
  ];
}
