/**
 * Request and reply schemas of the workflow, run, approval-gate and audit routes (CONTRACT.md "Workflows",
 * "Workflow runs", "Approval gates", "Audit"). Sizes are bounded so one request cannot make a snapshot huge.
 */
const jsonObject = { type: 'object', maxProperties: 200 } as const;
/** Canvas nodes and edges are the editor's objects, stored as sent; the definition YAML is what runs. */
const canvasNode = { type: 'object', description: 'A canvas node (the editor\'s object, stored as sent)' } as const;
const canvasEdge = { type: 'object', description: 'A canvas edge (the editor\'s object, stored as sent)' } as const;
const providerName = { type: 'string', maxLength: 200, description: 'A provider the workflow needs' } as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;

const contentMembers = {
  nodes: { type: 'array', maxItems: 2000, items: canvasNode },
  edges: { type: 'array', maxItems: 2000, items: canvasEdge },
  viewport: jsonObject,
  definitionYaml: { type: 'string', maxLength: 512 * 1024 },
  triggerConfig: jsonObject,
  providerRequirements: { type: 'array', maxItems: 100, items: providerName },
  workflowConfig: jsonObject,
} as const;

export const createWorkflowBody = {
  type: 'object',
  required: ['name'],
  properties: { name, ...contentMembers },
  additionalProperties: false,
} as const;

export const updateWorkflowBody = {
  type: 'object',
  minProperties: 1,
  properties: {
    name, ...contentMembers,
    status: { enum: ['draft', 'published', 'archived'] },
    changeReason: { type: 'string', maxLength: 2000 },
  },
  additionalProperties: false,
} as const;

export const workflowReply = {
  type: 'object',
  required: ['id', 'projectId', 'name', 'status', 'version'],
  properties: {
    id: { type: 'string' }, orgId: { type: 'string' }, projectId: { type: 'string' }, name: { type: 'string' },
    status: { enum: ['draft', 'published', 'archived'] }, version: { type: 'integer' },
    publishedVersion: { type: ['integer', 'null'] },
    nodes: { type: 'array', items: canvasNode }, edges: { type: 'array', items: canvasEdge }, viewport: { type: 'object' },
    definitionYaml: { type: 'string' }, definitionVersion: { enum: ['v1.1', 'v2'] }, schemaHash: { type: 'string' },
    triggerConfig: { type: 'object' }, providerRequirements: { type: 'array', items: providerName }, workflowConfig: { type: 'object' },
    createdBy: { type: 'string' }, createdAt: { type: 'string' }, updatedAt: { type: 'string' },
  },
} as const;

/** `GET /api/workflows`: the workflows the caller may read, without their canvas or definition. */
export const listWorkflowsReply = {
  type: 'object', required: ['workflows'],
  properties: {
    workflows: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'orgId', 'projectId', 'name', 'status', 'version', 'publishedVersion', 'createdBy', 'createdAt', 'updatedAt'],
        properties: {
          id: { type: 'string' }, orgId: { type: 'string' }, projectId: { type: 'string' }, name: { type: 'string' },
          status: { enum: ['draft', 'published', 'archived'] }, version: { type: 'integer' }, publishedVersion: { type: ['integer', 'null'] },
          createdBy: { type: 'string' }, createdAt: { type: 'string' }, updatedAt: { type: 'string' },
        },
      },
    },
  },
} as const;

/** `GET /api/workflows/{id}`: the workflow and what the caller may do with it. */
export const workflowReadReply = {
  ...workflowReply,
  required: [...workflowReply.required, 'can'],
  properties: {
    ...workflowReply.properties,
    can: {
      type: 'object', required: ['edit', 'publish', 'run'], description: 'What the caller may do (the write routes still decide)',
      properties: { edit: { type: 'boolean' }, publish: { type: 'boolean' }, run: { type: 'boolean' } },
    },
  },
} as const;

/** One immutable snapshot in full (spec 2.1). */
export const versionReply = {
  type: 'object',
  required: ['version', 'name', 'nodes', 'edges', 'definitionYaml', 'definitionVersion', 'schemaHash', 'changedBy', 'createdAt'],
  properties: {
    version: { type: 'integer' }, status: { type: 'string' }, name: { type: 'string' }, nodes: { type: 'array', items: canvasNode }, edges: { type: 'array', items: canvasEdge },
    viewport: { type: 'object' }, definitionYaml: { type: 'string' }, definitionVersion: { type: 'string' }, triggerConfig: { type: 'object' },
    providerRequirements: { type: 'array', items: providerName }, workflowConfig: { type: 'object' }, schemaHash: { type: 'string' },
    changedBy: { type: 'string' }, changeReason: { type: ['string', 'null'] }, createdAt: { type: 'string' },
  },
} as const;

export const listRunsQuery = {
  type: 'object', additionalProperties: false,
  properties: {
    limit: { type: 'string', pattern: '^[1-9][0-9]?$|^100$', description: 'Page size, 1-100 (default 20)' },
    cursor: { type: 'string', maxLength: 200, pattern: '^[A-Za-z0-9_-]+$', description: 'nextCursor of the previous page' },
  },
} as const;

export const runListReply = {
  type: 'object', required: ['runs', 'nextCursor'],
  properties: {
    runs: {
      type: 'array',
      items: {
        type: 'object', required: ['runId', 'version', 'status', 'startedBy', 'trigger', 'fireTime', 'input', 'createdAt'],
        properties: {
          runId: { type: 'string' }, version: { type: 'integer', description: 'The pinned workflow version' }, status: { type: 'string' },
          startedBy: { type: 'string' }, error: { type: ['string', 'null'] }, createdAt: { type: 'string' }, updatedAt: { type: 'string' },
          trigger: { enum: ['manual', 'schedule', 'webhook'], description: 'How the run started' },
          fireTime: { type: ['string', 'null'], format: 'date-time', description: "The schedule fire a scheduled run belongs to" },
          eventId: { type: ['string', 'null'], description: 'The provider delivery a webhook run started from' },
          input: { type: 'object', description: "The run's input (a webhook run's: the delivery's payload)" },
        },
      },
    },
    nextCursor: { type: ['string', 'null'] },
  },
} as const;

const fire = {
  type: 'object', required: ['fireTime', 'version', 'outcome', 'runId', 'runStatus', 'detail'],
  properties: {
    fireTime: { type: 'string', format: 'date-time' },
    version: { type: 'integer', description: 'The published version the fire ran (or would have run)' },
    outcome: {
      enum: ['starting', 'started', 'skipped-overlap', 'skipped-missed', 'skipped-paused', 'failed'],
      description: 'skipped-overlap: the previous run was still live (overlap: skip); skipped-missed: no node ran the schedule then, and a later fire was due or the catch-up window had passed; skipped-paused: the schedule was paused (never run later, not even after the resume)',
    },
    runId: { type: ['string', 'null'] },
    runStatus: { type: ['string', 'null'], description: "The fire's run's status now" },
    detail: { type: ['string', 'null'] },
  },
} as const;

/** What pausing or resuming a schedule answers: the pause as it is now. */
export const schedulePauseReply = {
  type: 'object',
  required: ['workflowId', 'paused', 'pausedAt', 'pausedBy'],
  properties: {
    workflowId: { type: 'string' }, paused: { type: 'boolean' },
    pausedAt: { type: ['string', 'null'], format: 'date-time' }, pausedBy: { type: ['string', 'null'] },
  },
} as const;

export const scheduleReply = {
  type: 'object',
  required: [
    'workflowId', 'status', 'paused', 'pausedAt', 'pausedBy', 'cron', 'timezone', 'overlap', 'catchupWindowSeconds', 'version', 'nextFireTimes',
    'pendingFireTime', 'lastFires',
  ],
  properties: {
    workflowId: { type: 'string' },
    paused: { type: 'boolean', description: 'Paused (`POST /api/workflows/{id}/schedule/pause`): its fires start no run and are recorded skipped-paused' },
    pausedAt: { type: ['string', 'null'], format: 'date-time' },
    pausedBy: { type: ['string', 'null'], description: 'Who paused it: a user, key or machine id' },
    status: { enum: ['none', 'active', 'ended'], description: 'none: never published with a schedule trigger; ended: archived, unpublished or given another trigger' },
    cron: { type: ['string', 'null'] },
    timezone: { type: ['string', 'null'] },
    overlap: { enum: ['skip', 'allow', null] },
    catchupWindowSeconds: { type: ['integer', 'null'] },
    version: { type: ['integer', 'null'], description: 'The published version each fire starts a run of' },
    nextFireTimes: { type: 'array', items: { type: 'string', format: 'date-time' }, description: 'The next five fires (empty unless active; while paused, each will be skipped)' },
    pendingFireTime: { type: ['string', 'null'], format: 'date-time', description: 'A fire whose run is being started' },
    lastFires: { type: 'array', items: fire, description: 'The last ten fires, newest first' },
  },
} as const;

export const listWorkflowsQuery = {
  type: 'object',
  properties: { projectId: { type: 'string', maxLength: 64 } },
} as const;

export const versionSummaries = {
  type: 'array',
  items: {
    type: 'object',
    required: ['version', 'changedBy', 'createdAt', 'schemaHash'],
    properties: {
      version: { type: 'integer' }, changedBy: { type: 'string' }, changeReason: { type: ['string', 'null'] },
      createdAt: { type: 'string' }, schemaHash: { type: 'string' },
    },
  },
} as const;

export const diffQuery = {
  type: 'object',
  required: ['compare'],
  properties: { compare: { type: 'integer', minimum: 1 } },
} as const;

export const versionDiffReply = {
  type: 'object',
  required: ['fromVersion', 'toVersion', 'nodesAdded', 'nodesRemoved', 'nodesModified', 'edgesAdded', 'edgesRemoved', 'yamlChanged'],
  properties: {
    fromVersion: { type: 'integer' }, toVersion: { type: 'integer' },
    nodesAdded: { type: 'array', items: { type: 'string' } }, nodesRemoved: { type: 'array', items: { type: 'string' } },
    nodesModified: { type: 'array', items: { type: 'string' } },
    edgesAdded: { type: 'integer' }, edgesRemoved: { type: 'integer' }, yamlChanged: { type: 'boolean' },
  },
} as const;

export const startRunBody = {
  type: 'object',
  properties: { input: { type: 'object', maxProperties: 100 } },
  additionalProperties: false,
} as const;

export const startRunReply = {
  type: 'object', required: ['runId', 'version'],
  properties: { runId: { type: 'string' }, version: { type: 'integer' } },
} as const;

/** One step of a run (actors/kinds/workflow-run Step): which node, how it went, and what it waits on. */
const runStep = {
  type: 'object',
  required: ['nodeId', 'kind', 'status', 'startedAt'],
  properties: {
    nodeId: { type: 'string' }, kind: { type: 'string' },
    status: { enum: ['running', 'waiting', 'suspended', 'completed', 'failed'] },
    startedAt: { type: 'string' }, endedAt: { type: 'string' }, sessionId: { type: 'string' }, gateId: { type: 'string' },
    decision: { type: 'string' }, driver: { type: 'string' }, branch: { type: 'boolean' }, iteration: { type: 'integer' },
    wakeAt: { type: 'string' }, error: { type: 'string' },
  },
} as const;

export const runReply = {
  type: 'object',
  required: ['runId', 'workflowId', 'version', 'status', 'steps'],
  properties: {
    runId: { type: 'string' }, workflowId: { type: 'string' }, version: { type: 'integer' },
    status: { type: 'string' }, steps: { type: 'array', items: runStep }, error: { type: ['string', 'null'] },
  },
} as const;

export const auditQuery = {
  type: 'object',
  properties: { limit: { type: 'integer', minimum: 1, maximum: 500 }, cursor: { type: 'string', pattern: '^[1-9][0-9]{0,14}$' } },
} as const;

export const auditPageReply = {
  type: 'object', required: ['entries', 'nextCursor'],
  properties: {
    entries: {
      type: 'array', description: 'Newest first',
      items: {
        type: 'object', required: ['orgId', 'seq', 'id', 'type', 'actor', 'subject', 'payload', 'prevHash', 'hash', 'createdAt'],
        properties: {
          orgId: { type: 'string' }, seq: { type: 'integer' }, id: { type: 'string' }, type: { type: 'string' }, actor: { type: 'string' },
          subject: { type: ['string', 'null'] }, payload: { description: 'What the event recorded (its shape depends on the type)' },
          prevHash: { type: 'string' }, hash: { type: 'string' }, createdAt: { type: 'string' },
        },
      },
    },
    nextCursor: { type: ['string', 'null'], description: 'Pass back as cursor for older entries; null on the last page' },
  },
} as const;

export const auditVerifyReply = {
  type: 'object', required: ['valid', 'checked'],
  properties: { valid: { type: 'boolean' }, checked: { type: 'integer' }, firstBrokenSeq: { type: 'integer' } },
} as const;

export const createGateBody = {
  type: 'object',
  required: ['projectId', 'title'],
  properties: {
    projectId: { type: 'string', maxLength: 64 },
    title: { type: 'string', minLength: 1, maxLength: 500 },
    issue: { type: 'string', minLength: 1, maxLength: 128 },
    sessionId: { type: 'string', minLength: 1, maxLength: 128 },
    escalation: { enum: ['live-session'] },
    requiredRole: { enum: ['owner', 'admin', 'member'] },
  },
  additionalProperties: false,
} as const;

export const listGatesQuery = {
  type: 'object',
  properties: {
    issue: { type: 'string', maxLength: 128 },
    status: { enum: ['pending', 'approved', 'rejected', 'escalated'] },
    for: { const: 'me', description: 'Only the pending gates the caller may decide (its role meets requiredRole)' },
  },
} as const;

export const listGatesReply = {
  type: 'object', required: ['gates'],
  properties: {
    gates: {
      type: 'array',
      items: {
        type: 'object', required: ['id', 'title', 'status', 'requiredRole', 'mayDecide', 'run', 'createdAt'],
        properties: {
          id: { type: 'string' }, projectId: { type: ['string', 'null'] }, title: { type: 'string' }, issue: { type: ['string', 'null'] },
          sessionId: { type: ['string', 'null'] }, runId: { type: ['string', 'null'] }, nodeId: { type: ['string', 'null'] },
          escalation: { type: ['string', 'null'] }, requiredRole: { type: ['string', 'null'] },
          status: { enum: ['pending', 'approved', 'rejected', 'escalated'] }, decidedBy: {}, comment: { type: ['string', 'null'] },
          driver: { type: ['string', 'null'] }, createdAt: { type: 'string' }, decidedAt: { type: ['string', 'null'] },
          mayDecide: { type: 'boolean', description: 'Whether the caller may decide it now (the decide route still decides)' },
          run: {
            type: ['object', 'null'], description: 'The run that opened it, with its pinned workflow version',
            properties: {
              runId: { type: 'string' }, workflowId: { type: 'string' }, workflowName: { type: ['string', 'null'] },
              version: { type: 'integer' }, status: { type: 'string' },
            },
          },
        },
      },
    },
  },
} as const;

/** An approval gate as the open and decide routes answer it. */
const gateView = {
  type: 'object', required: ['id', 'title', 'status', 'createdAt'],
  properties: {
    id: { type: 'string' }, projectId: { type: ['string', 'null'] }, title: { type: 'string' }, issue: { type: ['string', 'null'] },
    sessionId: { type: ['string', 'null'] }, runId: { type: ['string', 'null'] }, nodeId: { type: ['string', 'null'] },
    escalation: { type: ['string', 'null'] }, requiredRole: { type: ['string', 'null'] },
    status: { enum: ['pending', 'approved', 'rejected', 'escalated'] }, decidedBy: {}, comment: { type: ['string', 'null'] },
    driver: { type: ['string', 'null'] }, createdAt: { type: 'string' }, decidedAt: { type: ['string', 'null'] },
  },
} as const;

export const openGateReply = { type: 'object', required: ['gate'], properties: { gate: gateView } } as const;

export const decideGateReply = {
  type: 'object', required: ['resolved', 'decision', 'gate'],
  properties: {
    resolved: { type: 'boolean' },
    decision: { enum: ['approved', 'rejected', 'escalated'], description: 'The decision taken, in the past tense whichever form was sent' },
    gate: gateView,
  },
} as const;

/** The decisions a gate takes, as sent (either tense) and as answered and stored (the past tense). */
export const gateDecisionWords = {
  approve: 'approved', approved: 'approved', reject: 'rejected', rejected: 'rejected', escalate: 'escalated', escalated: 'escalated',
} as const;

export const decideGateBody = {
  type: 'object',
  required: ['decision'],
  properties: {
    decision: {
      enum: ['approve', 'approved', 'reject', 'rejected', 'escalate', 'escalated'],
      description: 'approve|approved, reject|rejected or escalate|escalated. Escalating a run\'s gate whose node says '
        + '`onEscalate: live-session` opens a session driven by the decider; the run resumes when it ends (decision 0069)',
    },
    actorRole: { enum: ['owner', 'admin', 'member', 'viewer'] },
    comment: { type: 'string', maxLength: 2000 },
  },
  additionalProperties: false,
} as const;
