import { agentCardDraft, plan } from './http.js';

/** The proposal actor's message, checked on arrival (it may have crossed the broker). */
const digest = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' } as const;
const uuid = { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' } as const;

export const proposalMessageSchema = {
  $id: 'troupe:authoring:proposal-message',
  type: 'object', additionalProperties: false,
  required: ['type', 'orgId', 'projectId', 'target', 'workflowId', 'expectedVersion', 'digests', 'by'],
  properties: {
    type: { const: 'proposal.append' },
    orgId: uuid,
    projectId: uuid,
    target: { enum: ['workflow', 'agentCard'] },
    workflowId: { anyOf: [uuid, { const: '' }] },
    agentCardId: { anyOf: [uuid, { const: '' }] },
    expectedVersion: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    plan,
    card: agentCardDraft,
    digests: {
      type: 'object', additionalProperties: false, required: ['candidateDigest', 'baseDigest', 'vocabularyDigest', 'policyDigest'],
      properties: { candidateDigest: digest, baseDigest: digest, vocabularyDigest: digest, policyDigest: digest },
    },
    by: { type: 'string', minLength: 1, maxLength: 200 },
  },
  // A workflow proposal carries a plan, an agent-card proposal a card; never both.
  if: { properties: { target: { const: 'agentCard' } } },
  then: { required: ['card'], properties: { plan: false } },
  else: { required: ['plan'], properties: { card: false } },
} as const;

/**
 * An agent-card draft (spec 4.8, issue 17): the payload of an agent card version (schemas/agents/agent-card.ts)
 * with every member present, as synthesis produces it.
 */
export interface AgentCardDraft {
  readonly name: string;
  readonly description: string;
  readonly prompt: string;
  readonly capabilities: readonly string[];
  readonly model: string;
  readonly config: Readonly<Record<string, unknown>>;
}

export type AuthoringTarget = 'workflow' | 'agentCard';

/**
 * A candidate plan (spec 4.1): the canvas an authoring helper proposes. It is a workflow definition seen from the
 * canvas: each node names its kind by `nodeKey` (from the vocabulary) and carries that kind's members in `config`.
 * A plan is valid when every node kind is in the vocabulary and the v2 definition it stands for passes the same
 * checks a publish runs (`analyseDefinition`).
 */
export interface PlanNode {
  readonly id: string;
  readonly nodeKey: string;
  readonly config: Readonly<Record<string, unknown>>;
}

export interface PlanEdge {
  readonly source: string;
  readonly target: string;
  readonly when?: boolean;
}

export interface CandidatePlan {
  readonly name: string;
  readonly description: string;
  readonly nodes: readonly PlanNode[];
  readonly edges: readonly PlanEdge[];
}

export interface ProposalDigests {
  readonly candidateDigest: string;
  readonly baseDigest: string;
  readonly vocabularyDigest: string;
  readonly policyDigest: string;
}

export interface ProposalRecord {
  readonly id: string;
  readonly orgId: string;
  readonly projectId: string;
  readonly target: AuthoringTarget;
  /** The workflow the candidate was drafted against; '' for a new workflow or an agent-card proposal. */
  readonly workflowId: string;
  /** The agent card an agent-card candidate was drafted against; '' for a new card or a workflow proposal (and in
   * snapshots from before agent-card drafts). */
  readonly agentCardId?: string;
  readonly status: 'draft';
  readonly version: number;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ProposalVersionRecord {
  readonly proposalId: string;
  readonly version: number;
  /** A workflow proposal's candidate. */
  readonly plan?: CandidatePlan;
  /** An agent-card proposal's candidate. */
  readonly card?: AgentCardDraft;
  readonly digests: ProposalDigests;
  readonly createdBy: string;
  readonly createdAt: number;
}
