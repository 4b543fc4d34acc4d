/**
 * Shapes of the messages the workflow, workflow-run and approval-gate actors accept. Messages cross the broker,
 * so the runtime checks each against its kind's schema on arrival, before the pure `decide` sees it.
 */
const id = { type: 'string', minLength: 1, maxLength: 128 } as const;
const actor = { type: 'object', required: ['id', 'label'], properties: { id, label: { type: 'string', minLength: 1, maxLength: 256 } } } as const;
const content = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    nodes: { type: 'array' }, edges: { type: 'array' }, viewport: { type: 'object' },
    definitionYaml: { type: 'string' }, triggerConfig: { type: 'object' }, providerRequirements: { type: 'array' }, workflowConfig: { type: 'object' },
  },
} as const;

export const workflowMessageSchema = {
  $id: 'troupe:workflow-actor-message',
  type: 'object',
  required: ['type', 'orgId'],
  properties: { type: { enum: ['workflow.create', 'workflow.update', 'workflow.rollback'] }, orgId: id },
  oneOf: [
    { properties: { type: { const: 'workflow.create' } }, required: ['projectId', 'content', 'actor'], }, 
    { properties: { type: { const: 'workflow.update' } }, required: ['changes', 'actor', 'mayPublish'] },
    { properties: { type: { const: 'workflow.rollback' } }, required: ['toVersion', 'content', 'actor', 'mayPublish'] },
  ],
  allOf: [
    { properties: { projectId: id, content, changes: content, actor, mayPublish: { type: 'boolean' }, toVersion: { type: 'integer', minimum: 1 }, status: { enum: ['draft', 'published', 'archived'] }, changeReason: { type: 'string', maxLength: 2000 } } },
  ],
} as const;

export const runMessageSchema = {
  $id: 'troupe:workflow-run-message',
  type: 'object',
  required: ['type'],
  properties: {
    type: { enum: ['run.start', 'run.resume', 'run.wake', 'run.agentFinished', 'run.gateDecided'] },
    orgId: id, nodeId: id, gateId: id, sessionId: id, token: id,
    input: { type: 'object' },
    trigger: {
      type: 'object', required: ['kind'], additionalProperties: false,
      properties: { kind: { enum: ['manual', 'schedule', 'webhook'] }, fireTime: { type: 'string', format: 'date-time' }, eventId: id },
    },
    status: { type: 'string', maxLength: 32 },
    requestedBy: { type: 'string', maxLength: 200 },
    decision: { enum: ['approved', 'rejected', 'escalated'] },
    comment: { type: 'string', maxLength: 2000 },
  },
} as const;

export const gateMessageSchema = {
  $id: 'troupe:approval-gate-message',
  type: 'object',
  required: ['type', 'orgId'],
  properties: {
    type: { enum: ['gate.open', 'gate.decide'] },
    orgId: id,
    decision: { enum: ['approved', 'rejected', 'escalated'] },
  },
} as const;

/** The schedule actor's messages (actors/kinds/workflow-schedule/machine.ts). */
export const scheduleMessageSchema = {
  $id: 'troupe:workflow-schedule-message',
  type: 'object',
  required: ['type'],
  oneOf: [
    {
      properties: {
        type: { const: 'schedule.configure' }, orgId: id, projectId: id,
        workflowVersion: { type: 'integer', minimum: 1 }, publishedVersion: { type: ['integer', 'null'], minimum: 1 },
        trigger: { type: 'object', required: ['type'], properties: { type: { enum: ['manual', 'schedule', 'webhook'] } } },
      },
      required: ['orgId', 'projectId', 'workflowVersion', 'publishedVersion', 'trigger'],
    },
    { properties: { type: { const: 'schedule.tick' } } },
    {
      properties: {
        type: { const: 'schedule.fired' }, fireTime: { type: 'integer', minimum: 0 }, runId: id,
        outcome: { enum: ['started', 'skipped-overlap', 'failed'] }, detail: { type: 'string', maxLength: 2000 },
      },
      required: ['fireTime', 'runId', 'outcome'],
    },
    {
      properties: { type: { enum: ['schedule.pause', 'schedule.resume'] }, orgId: id, by: { type: 'string', minLength: 1, maxLength: 200 } },
      required: ['orgId', 'by'],
    },
  ],
} as const;
