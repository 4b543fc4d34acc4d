import type { components, operations } from '../../client/api-types.generated.js';

/**
 * The replies and bodies the console reads and sends, as the generated client types them from the document the node
 * serves: when a route changes what it sends, the console's typecheck fails here rather than a page failing a person.
 */
type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;
type Schemas = components['schemas'];

export type ErrorBody = Schemas['Error'];

export type AuthSession = JsonOf<operations['getApiAuthSession']['responses'][200]>;
export type SignInRequest = JsonOf<operations['postApiAuthLogin']['requestBody']>;
export type WhoAmI = JsonOf<operations['getApiCliWhoami']['responses'][200]>;
export type OrgList = JsonOf<operations['getApiOrgList']['responses'][200]>;
export type OrgRole = OrgList['orgs'][number]['role'];

export type SessionList = JsonOf<operations['getApiSessions']['responses'][200]>;
export type SessionListItem = SessionList['sessions'][number];
export type SessionDetail = JsonOf<operations['getApiPublicSessionsId']['responses'][200]>;
export type SessionPromptRequest = JsonOf<operations['postApiPublicSessionsIdPrompt']['requestBody']>;
export type SessionStatusEvent = Schemas['SessionStatusEvent'];
export type InterviewDeltaEvent = Schemas['InterviewDeltaEvent'];
export type TranscriptEntry = Schemas['TranscriptEntry'];
export type TranscriptPage = JsonOf<operations['getApiPublicSessionsIdTranscript']['responses'][200]>;
export type RepositoryList = JsonOf<operations['getApiProjectsProjectIdRepositories']['responses'][200]>;
export type Repository = RepositoryList['repositories'][number];
export type NewRepository = JsonOf<operations['postApiProjectsProjectIdRepositories']['requestBody']>;
export type DispatchRequest = JsonOf<operations['postApiAgentDispatch']['requestBody']>;
export type Dispatched = JsonOf<operations['postApiAgentDispatch']['responses'][201]>;
export type AgentPreset = NonNullable<DispatchRequest['agent']>;

export type FleetStats = JsonOf<operations['getApiFleetStats']['responses'][200]>;
export type FleetWorkerList = JsonOf<operations['getApiFleetWorkers']['responses'][200]>;

export type ApprovalGateList = JsonOf<operations['getApiApprovalGates']['responses'][200]>;
export type ApprovalGate = ApprovalGateList['gates'][number];
export type GateDecisionRequest = JsonOf<operations['postApiApprovalGatesIdDecide']['requestBody']>;

export type AuditPage = JsonOf<operations['getApiAudit']['responses'][200]>;
export type AuditEntry = AuditPage['entries'][number];
export type AuditVerification = JsonOf<operations['getApiAuditVerify']['responses'][200]>;

export type IncidentList = JsonOf<operations['getApiIncidents']['responses'][200]>;
export type Incident = IncidentList['incidents'][number];

export type PolicyList = JsonOf<operations['getApiPolicies']['responses'][200]>;
export type PolicyDetail = JsonOf<operations['getApiPoliciesId']['responses'][200]>;
export type Policy = PolicyDetail['policy'];
export type PolicyVersion = PolicyDetail['versions'][number];
export type PolicySimulation = JsonOf<operations['postApiProjectsProjectIdAuthoringSimulate']['responses'][200]>;

export type WorkflowList = JsonOf<operations['getApiWorkflows']['responses'][200]>;
export type Workflow = JsonOf<operations['getApiWorkflowsId']['responses'][200]>;
export type WorkflowChange = JsonOf<operations['patchApiWorkflowsId']['requestBody']>;
export type WorkflowVersionList = JsonOf<operations['getApiWorkflowsIdVersions']['responses'][200]>;
export type WorkflowVersion = JsonOf<operations['getApiWorkflowsIdVersionsVersion']['responses'][200]>;
export type WorkflowRunList = JsonOf<operations['getApiWorkflowsIdRuns']['responses'][200]>;
export type NewWorkflow = JsonOf<operations['postApiProjectsProjectIdWorkflows']['requestBody']>;
export type WorkflowWritten = JsonOf<operations['postApiProjectsProjectIdWorkflows']['responses'][201]>;

export type BuilderTurnRequest = JsonOf<operations['postApiProjectsProjectIdAuthoringConversation']['requestBody']>;
export type BuilderTurn = JsonOf<operations['postApiProjectsProjectIdAuthoringConversation']['responses'][200]>;
export type SynthesisRequest = NonNullable<BuilderTurn['synthesisRequest']>;
export type SynthesizeRequest = JsonOf<operations['postApiProjectsProjectIdAuthoringSynthesize']['requestBody']>;
export type Synthesized = JsonOf<operations['postApiProjectsProjectIdAuthoringSynthesize']['responses'][200]>;
export type CandidatePlan = NonNullable<NonNullable<Synthesized['candidate']>['plan']>;
export type ApplyRequest = JsonOf<operations['postApiProjectsProjectIdAuthoringApply']['requestBody']>;
export type Applied = JsonOf<operations['postApiProjectsProjectIdAuthoringApply']['responses'][200]>;
export type ProposalDetail = JsonOf<operations['getApiProjectsProjectIdAuthoringProposalsId']['responses'][200]>;

export type WebPushPublicKey = JsonOf<operations['getApiNotificationsWebPushPublicKey']['responses'][200]>;
export type WebPushSubscription = JsonOf<operations['postApiNotificationsWebPushSubscribe']['requestBody']>;

/** Every preset the server accepts, each as a person reads it (`satisfies` fails the build when the server adds one). */
export const AGENT_PRESETS = {
  command: 'Shell command (--agent-command)',
  'claude-code': 'Claude Code',
  codex: 'Codex',
  gemini: 'Gemini',
} as const satisfies Record<AgentPreset, string>;
export type AgentRequest = JsonOf<operations['getApiApprovalGatesIdAgentRequest']['responses'][200]>;
