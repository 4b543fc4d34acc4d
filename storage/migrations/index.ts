import type { Migration } from './migration.js';
import { actorSnapshots } from './0001-actor-snapshots.js';
import { auditLog } from './0002-audit-log.js';
import { identityMigration } from './0003_identity.js';
import { sessionsMigration } from './0004_sessions.js';
import { workflowsMigration } from './0005_workflows.js';
import { governanceMigration } from './0006_governance.js';
import { authoringMigration } from './0007_authoring.js';
import { daemonExtrasMigration } from './0008_daemon_extras.js';
import { templatesMigration } from './0009_templates.js';
import { analyticsMigration } from './0010_analytics.js';
import { integrationsMigration } from './0011_integrations.js';
import { agentsAndPushMigration } from './0012_agents_and_push.js';
import { integrationOAuthMigration } from './0013_integration_oauth.js';
import { authzDenialsMigration } from './0014_authz_denials.js';
import { pendingMutationsIndexMigration } from './0015_pending_mutations_index.js';
import { daemonLivenessHotUpdatesMigration } from './0016_daemon_liveness_hot_updates.js';
import { revokedUserTokensMigration } from './0017_revoked_user_tokens.js';
import { oauthConnectionRefreshMigration } from './0018_oauth_connection_refresh.js';
import { sessionTransitionsMigration } from './0030_session_transitions.js';
import { gateDecisionCommentsMigration } from './0031_gate_decision_comments.js';
import { sessionOutputMigration } from './0032_session_output.js';
import { webhookRoutingAndReplaysMigration } from './0036_webhook_routing_and_replays.js';
import { sessionsByTrackerIdMigration } from './0037_sessions_by_tracker_id.js';
import { workflowTriggersMigration } from './0040_workflow_triggers.js';
import { trackerCommentsMigration } from './0041_tracker_comments.js';
import { agentCardProposalsMigration } from './0042_agent_card_proposals.js';
import { auditOutboxMigration } from './0044_audit_outbox.js';
import { rotationReplayMigration } from './0045_rotation_replay.js';
import { providerAccountIdsMigration } from './0046_provider_account_ids.js';
import { sessionPublicIdsMigration } from './0047_session_public_ids.js';
import { projectRepositoriesMigration } from './0048_project_repositories.js';
import { sessionRunReportsMigration } from './0049_session_run_reports.js';
import { queueControlMigration } from './0050_queue_control.js';
import { sessionPriorityConcurrencyMigration } from './0051_session_priority_concurrency.js';
import { projectBudgetsMigration } from './0052_project_budgets.js';
import { orgSsoMigration } from './0053_org_sso.js';
import { sessionTranscriptsMigration } from './0054_session_transcripts.js';
import { queueFairnessMigration } from './0055_queue_fairness.js';
import { sessionAgentLineMigration } from './0056_session_agent_line.js';
import { outputRelayOnceMigration } from './0057_output_relay_once.js';
import { ssoDomainVerificationMigration } from './0058_sso_domain_verification.js';

export type { Migration } from './migration.js';

/**
 * Every migration, in order. A static list rather than a directory scan, so the same source runs under tsx, compiled
 * output and bundlers alike. Ordered by number; a new migration takes the next number and goes at the end.
 */
export const migrations: readonly Migration[] = [
  actorSnapshots, // 0001
  auditLog, // 0002
  identityMigration, // 0003
  sessionsMigration, // 0004
  workflowsMigration, // 0005
  governanceMigration, // 0006
  authoringMigration, // 0007
  daemonExtrasMigration, // 0008
  templatesMigration, // 0009
  analyticsMigration, // 0010
  integrationsMigration, // 0011
  agentsAndPushMigration, // 0012
  integrationOAuthMigration, // 0013
  authzDenialsMigration, // 0014
  pendingMutationsIndexMigration, // 0015
  daemonLivenessHotUpdatesMigration, // 0016
  revokedUserTokensMigration, // 0017
  oauthConnectionRefreshMigration, // 0018
  sessionTransitionsMigration, // 0030
  gateDecisionCommentsMigration, // 0031
  sessionOutputMigration, // 0032
  webhookRoutingAndReplaysMigration, // 0036
  sessionsByTrackerIdMigration, // 0037
  workflowTriggersMigration, // 0040
  trackerCommentsMigration, // 0041
  agentCardProposalsMigration, // 0042
  auditOutboxMigration, // 0044
  rotationReplayMigration, // 0045
  providerAccountIdsMigration, // 0046
  sessionPublicIdsMigration, // 0047
  projectRepositoriesMigration, // 0048
  sessionRunReportsMigration, // 0049
  queueControlMigration, // 0050
  sessionPriorityConcurrencyMigration, // 0051
  projectBudgetsMigration, // 0052
  orgSsoMigration, // 0053
  sessionTranscriptsMigration, // 0054
  queueFairnessMigration, // 0055
  sessionAgentLineMigration, // 0056
  outputRelayOnceMigration, // 0057
  ssoDomainVerificationMigration, // 0058
];
