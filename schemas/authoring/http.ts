/**
 * Request and reply schemas of the authoring routes (spec 1.3, 2.2, 2.3, 4.1; CONTRACT.md "Authoring";
 * ops/decisions/0011-authoring.md). Every array and string is bounded so a hostile body cannot make a handler walk
 * an unbounded structure; the finer checks (round order, definition validity, digests) are the handlers'.
 */
import { MAX_EDGES, MAX_NODES } from '../workflows/definition.js';
import { agentCardPayload } from '../agents/agent-card.js';

const uuid = { type: 'string', format: 'uuid' } as const;
const uuidOrEmpty = { anyOf: [uuid, { const: '' }] } as const;
const digest = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' } as const;
const goal = { type: 'string', minLength: 1, maxLength: 2000, pattern: '\\S' } as const;
const nodeId = { type: 'string', minLength: 1, maxLength: 64 } as const;
export const target = { enum: ['workflow', 'agentCard'] } as const;
const isoTime = { type: 'string', format: 'date-time', maxLength: 40 } as const;

/** Simulation accepts more nodes than a definition may hold, so it can say 413 rather than a schema 400 up to here. */
export const MAX_SIMULATION_BODY_NODES = 1000;

const planSchema = (maxNodes: number) => ({
  type: 'object', additionalProperties: false, required: ['name', 'description', 'nodes', 'edges'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: 'string', maxLength: 5000 },
    nodes: {
      type: 'array', maxItems: maxNodes,
      items: {
        type: 'object', additionalProperties: false, required: ['id', 'nodeKey', 'config'],
        properties: { id: nodeId, nodeKey: { type: 'string', minLength: 1, maxLength: 200 }, config: { type: 'object', maxProperties: 50 } },
      },
    },
    edges: {
      type: 'array', maxItems: MAX_EDGES,
      items: {
        type: 'object', additionalProperties: false, required: ['source', 'target'],
        properties: { source: nodeId, target: nodeId, when: { type: 'boolean' } },
      },
    },
  },
}) as const;

export const plan = planSchema(MAX_NODES);

/** An agent-card candidate: an agent card payload with every member present (synthesis always fills them). */
export const agentCardDraft = {
  ...agentCardPayload,
  required: ['name', 'description', 'prompt', 'capabilities', 'model', 'config'],
} as const;

/** The rounds of both targets: a workflow's (outcome, steps, guardrails) and an agent card's (role, instructions, abilities). */
const roundNames = ['outcome', 'steps', 'guardrails', 'role', 'instructions', 'abilities'] as const;

/** Spec 2.3, exactly: the client carries it between turns and the server revalidates all of it. */
export const builderState = {
  type: 'object', additionalProperties: false,
  required: ['kind', 'schemaVersion', 'goal', 'target', 'workflowId', 'agentCardId', 'nextRound', 'turns'],
  properties: {
    kind: { const: 'builder-conversation' },
    schemaVersion: { const: '1' },
    goal,
    target,
    /** The workflow being authored; '' while it is a new one. */
    workflowId: uuidOrEmpty,
    /** The agent card agent steps use; '' for none. */
    agentCardId: uuidOrEmpty,
    nextRound: { enum: [...roundNames, 'complete'] },
    turns: {
      type: 'array', maxItems: 3,
      items: {
        type: 'object', additionalProperties: false, required: ['round', 'prompt', 'answer', 'answeredAt'],
        properties: {
          round: { enum: roundNames },
          prompt: { type: 'string', maxLength: 1000 },
          answer: { type: 'object', maxProperties: 20 },
          answeredAt: isoTime,
        },
      },
    },
  },
} as const;

/** What the server signs the state with; sent back unchanged with the next answer. */
export const conversationToken = {
  type: 'object', additionalProperties: false, required: ['id', 'startedAt', 'stateMac'],
  properties: {
    id: uuid,
    startedAt: isoTime,
    expiresAt: isoTime,
    round: { type: 'integer', minimum: 0, maximum: 3 },
    maxRounds: { const: 3 },
    stateMac: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
  },
} as const;

/**
 * `start` carries the goal (and optionally the workflow and agent card); `answer` carries the state, the answer to
 * its `nextRound` and the `conversation` token the previous reply gave. Members of the other action are refused.
 */
export const conversationBody = {
  type: 'object', additionalProperties: false, required: ['action'],
  properties: {
    action: { enum: ['start', 'answer'] },
    goal, target, workflowId: uuidOrEmpty, agentCardId: uuidOrEmpty,
    state: builderState, answer: { type: 'object', maxProperties: 20 }, conversation: conversationToken,
  },
  if: { properties: { action: { const: 'start' } } },
  // Each branch restates the members it requires, so the branch is readable (and lintable) on its own.
  then: { required: ['goal'], properties: { goal, state: false, answer: false, conversation: false } },
  else: {
    required: ['state', 'answer', 'conversation'],
    properties: {
      state: builderState, answer: { type: 'object', maxProperties: 20 }, conversation: conversationToken,
      goal: false, target: false, workflowId: false, agentCardId: false,
    },
  },
} as const;

export const synthesisRequest = {
  type: 'object', additionalProperties: false, required: ['kind', 'schemaVersion', 'target', 'goal'],
  properties: {
    kind: { const: 'synthesis-request' },
    schemaVersion: { const: '1' },
    target,
    goal,
    workflowId: uuidOrEmpty,
    agentCardId: uuidOrEmpty,
    outcome: { type: 'string', maxLength: 2000 },
    steps: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 2000 } },
    approval: { type: 'boolean' },
    approverRole: { enum: ['owner', 'admin', 'member'] },
    waitSeconds: { type: 'integer', minimum: 0, maximum: 7 * 24 * 3600 },
    /** Agent-card requests: what the agent is for, its standing instructions, its capabilities and model. */
    description: { type: 'string', maxLength: 2000 },
    instructions: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 2000 } },
    capabilities: agentCardPayload.properties.capabilities,
    model: agentCardPayload.properties.model,
  },
} as const;

export const conversationReply = {
  type: 'object', required: ['status', 'state', 'query', 'synthesisRequest', 'conversation'],
  properties: {
    status: { enum: ['question', 'ready'] },
    state: builderState,
    query: {
      type: ['object', 'null'],
      properties: { round: { type: 'string' }, prompt: { type: 'string' }, answerSchema: { type: 'object' } },
    },
    synthesisRequest: { anyOf: [synthesisRequest, { type: 'null' }] },
    conversation: conversationToken,
  },
} as const;

export const synthesizeBody = {
  type: 'object', additionalProperties: false, required: ['synthesisRequest'],
  properties: { synthesisRequest },
} as const;

const digests = {
  type: 'object', required: ['candidateDigest', 'baseDigest', 'vocabularyDigest', 'policyDigest'],
  properties: { candidateDigest: digest, baseDigest: digest, vocabularyDigest: digest, policyDigest: digest },
} as const;

export const synthesizeReply = {
  type: 'object', required: ['status'],
  properties: {
    status: { enum: ['question', 'candidate'] },
    questions: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, question: { type: 'string' } } } },
    candidate: {
      type: 'object', required: ['target'],
      description: 'A workflow candidate carries `plan` (and `workflowId`), an agent-card candidate `card` (and `agentCardId`)',
      properties: { target: { enum: ['workflow', 'agentCard'] }, workflowId: { type: 'string' }, agentCardId: { type: 'string' }, plan, card: agentCardDraft },
    },
    digests,
  },
} as const;

export const applyBody = {
  type: 'object', additionalProperties: false,
  required: ['target', 'candidateDigest', 'baseDigest', 'vocabularyDigest', 'policyDigest'],
  properties: {
    target,
    /** The workflow the candidate was drafted against ('' or absent: a new workflow); baseDigest is its version. */
    workflowId: uuidOrEmpty,
    /** The agent card an agent-card candidate was drafted against ('' or absent: a new card); baseDigest is its version. */
    agentCardId: uuidOrEmpty,
    candidateDigest: digest, baseDigest: digest, vocabularyDigest: digest, policyDigest: digest,
    plan,
    card: agentCardDraft,
    /** Both present to append a version to an existing proposal; both absent to store a new one. */
    proposalId: uuid,
    proposalVersion: { type: 'integer', minimum: 1, maximum: 1_000_000 },
  },
  dependentRequired: { proposalId: ['proposalVersion'], proposalVersion: ['proposalId'] },
  // `target: workflow` stores a plan, `target: agentCard` a card.
  if: { properties: { target: { const: 'workflow' } } },
  then: { required: ['plan'], properties: { plan, card: false, agentCardId: false } },
  else: { required: ['card'], properties: { card: agentCardDraft, plan: false, workflowId: false } },
} as const;

/** Spec 2.2. */
export const applyReply = {
  type: 'object', required: ['applied', 'target', 'proposalId', 'status', 'version', 'auditPending'],
  properties: {
    applied: { type: 'boolean' }, target: { type: 'string' }, proposalId: uuid, status: { const: 'draft' },
    version: { type: 'integer', minimum: 1 }, auditPending: { type: 'boolean' },
  },
} as const;

export const proposalReply = {
  type: 'object', required: ['proposal', 'versions'],
  properties: {
    proposal: {
      type: 'object', required: ['id', 'projectId', 'target', 'workflowId', 'status', 'version', 'createdBy', 'createdAt', 'updatedAt'],
      properties: {
        id: uuid, projectId: uuid, target: { type: 'string' }, workflowId: { type: 'string' }, agentCardId: { type: 'string' }, status: { type: 'string' },
        version: { type: 'integer' }, createdBy: { type: 'string' }, createdAt: isoTime, updatedAt: isoTime,
      },
    },
    versions: {
      type: 'array',
      items: { type: 'object', properties: { version: { type: 'integer' }, plan, card: agentCardDraft, digests, createdBy: { type: 'string' }, createdAt: isoTime } },
    },
  },
} as const;

export const listProposalsReply = {
  type: 'object', required: ['proposals'],
  properties: { proposals: { type: 'array', items: proposalReply.properties.proposal } },
} as const;

export const listProposalsQuery = {
  type: 'object', additionalProperties: false,
  properties: { limit: { type: 'integer', minimum: 1, maximum: 200 }, offset: { type: 'integer', minimum: 0, maximum: 100_000 } },
} as const;

export const simulateBody = {
  type: 'object', additionalProperties: false, required: ['policyId', 'policyVersion', 'plan'],
  properties: {
    policyId: uuid,
    policyVersion: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    plan: planSchema(MAX_SIMULATION_BODY_NODES),
  },
} as const;

export const simulateReply = {
  type: 'object', required: ['decision', 'nodes'],
  properties: {
    decision: { enum: ['allow', 'deny'] },
    policy: { type: 'object', properties: { id: uuid, version: { type: 'integer' } } },
    nodes: {
      type: 'array',
      items: {
        type: 'object', required: ['id', 'decision', 'reasons', 'errors'],
        properties: {
          id: { type: 'string' }, nodeKey: { type: 'string' }, decision: { enum: ['allow', 'deny'] },
          reasons: { type: 'array', items: { type: 'string' } }, errors: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  },
} as const;
