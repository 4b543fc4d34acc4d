/**
 * Daemon protocol shapes: the params schema of each mutation op (spec 3.2 leaves them open; these are ours, see
 * decision 0007), the daemon-host actor's messages, and the request bodies of the daemon routes.
 */
const uuid = { type: 'string', format: 'uuid' } as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
const modelName = { type: 'string', minLength: 1, maxLength: 200 } as const;
const modelList = { type: 'array', maxItems: 200, uniqueItems: true, items: modelName } as const;

/** One schema per op. Every params object is closed: an unknown member is a 400, never silently delivered. */
export const mutationParamsSchemas = {
  'project.add': { type: 'object', additionalProperties: false, required: ['projectId'], properties: { projectId: uuid } },
  'project.remove': { type: 'object', additionalProperties: false, required: ['projectId'], properties: { projectId: uuid } },
  'pool.deleted': { type: 'object', additionalProperties: false, required: ['poolId'], properties: { poolId: name } },
  'modelAccess.set': {
    type: 'object', additionalProperties: false, required: ['allow'],
    properties: { allow: { ...modelList, minItems: 1 }, deny: modelList, reason: { type: 'string', maxLength: 1000 } },
  },
  'modelAccess.clear': { type: 'object', additionalProperties: false, required: ['workloadId'], properties: { workloadId: name } },
} as const;

const mutationVariants = Object.entries(mutationParamsSchemas).map(([op, params]) => ({ op, params }));

/** `POST /api/daemon/mutations`: the op selects which params schema applies. */
export const enqueueMutationBody = {
  type: 'object',
  required: ['workerHostId', 'op', 'params'],
  properties: {
    workerHostId: { type: 'string', minLength: 1, maxLength: 64 },
    op: { enum: Object.keys(mutationParamsSchemas) },
    params: { type: 'object' },
  },
  allOf: mutationVariants.map(({ op, params }) => ({
    if: { properties: { op: { const: op } }, required: ['op'] },
    then: { properties: { params } },
  })),
} as const;

export const daemonHostMessageSchema = {
  oneOf: [
    {
      type: 'object', additionalProperties: false,
      required: ['type', 'orgId', 'registrationId', 'hostname', 'maxAgents', 'projectIds'],
      properties: {
        type: { const: 'daemonHost.register' }, orgId: uuid, registrationId: uuid, hostname: name,
        maxAgents: { type: 'integer', minimum: 0, maximum: 10_000 },
        projectIds: { type: 'array', maxItems: 1000, items: uuid },
      },
    },
    {
      type: 'object', additionalProperties: false, required: ['type', 'mutationId', 'op', 'params', 'requestedBy'],
      properties: {
        type: { const: 'daemonHost.enqueue' }, mutationId: uuid, op: { enum: Object.keys(mutationParamsSchemas) },
        params: { type: 'object' }, requestedBy: name,
      },
      allOf: mutationVariants.map(({ op, params }) => ({
        if: { properties: { op: { const: op } }, required: ['op'] },
        then: { properties: { params } },
      })),
    },
    { type: 'object', additionalProperties: false, required: ['type'], properties: { type: { const: 'daemonHost.deliver' } } },
    {
      type: 'object', additionalProperties: false, required: ['type', 'mutationId'],
      properties: { type: { const: 'daemonHost.cancel' }, mutationId: uuid },
    },
  ],
} as const;

export const registerBody = {
  type: 'object',
  additionalProperties: false,
  required: ['registrationToken', 'hostname', 'maxAgents'],
  properties: {
    registrationToken: { type: 'string', minLength: 1, maxLength: 200 },
    hostname: name,
    maxAgents: { type: 'integer', minimum: 0, maximum: 10_000 },
  },
} as const;

export const heartbeatBody = {
  type: 'object',
  required: ['workerId'],
  properties: {
    workerId: { type: 'string', minLength: 1, maxLength: 64 },
    activeSessionIds: { type: 'array', maxItems: 1000, items: { type: 'string', maxLength: 64 } },
    load: { type: 'number', minimum: 0, maximum: 1e6 },
  },
} as const;

export const pollBody = {
  type: 'object',
  required: ['workerId', 'capacity'],
  properties: {
    workerId: { type: 'string', minLength: 1, maxLength: 64 },
    capacity: { type: 'integer', minimum: 0, maximum: 100 },
  },
} as const;
