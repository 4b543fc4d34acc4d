import { sessionRepositorySchema } from '../repositories/http.js';
import { AGENT_PRESETS } from '../repositories/repository.js';

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

/**
 * Mutations only a control route enqueues, each with its own authorization and audit entry (decision 0079):
 * `worker.drain` (`POST /api/workers/{workerId}/drain`) has the worker drain as on SIGTERM and exit.
 */
export const controlMutationParamsSchemas = {
  'worker.drain': { type: 'object', additionalProperties: false, properties: {} },
} as const;

/** Every op a daemon host's queue holds and a heartbeat delivers. */
const everyMutationParamsSchema = { ...mutationParamsSchemas, ...controlMutationParamsSchemas };

const mutationVariants = Object.entries(mutationParamsSchemas).map(([op, params]) => ({ op, params }));
const everyMutationVariant = Object.entries(everyMutationParamsSchema).map(([op, params]) => ({ op, params }));

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
        type: { const: 'daemonHost.enqueue' }, mutationId: uuid, op: { enum: Object.keys(everyMutationParamsSchema) },
        params: { type: 'object' }, requestedBy: name,
      },
      allOf: everyMutationVariant.map(({ op, params }) => ({
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

const isoTime = { type: 'string', format: 'date-time' } as const;

/** A mutation as the heartbeat delivers it and the history lists it; `params` follows its op's schema above. */
export const mutationViewSchema = {
  type: 'object',
  required: ['id', 'orgId', 'workerHostId', 'requestedBy', 'op', 'params', 'status', 'createdAt'],
  properties: {
    id: uuid, orgId: uuid, workerHostId: { type: 'string' }, requestedBy: { type: 'string' },
    op: { enum: Object.keys(everyMutationParamsSchema), description: '`worker.drain` comes from `POST /api/workers/{workerId}/drain`: drain as on SIGTERM, then exit' },
    params: { type: 'object', description: "The op's parameters (see the enqueue body: one schema per op; `worker.drain` takes none)" },
    status: { enum: ['pending', 'delivered', 'cancelled'] },
    createdAt: isoTime, deliveredAt: isoTime, cancelledAt: isoTime,
  },
} as const;

/**
 * What a poll offers: a pending session of one of the worker's projects to claim, or, with `queuedPrompts`, a
 * session the worker already holds and the prompts queued for it since its last poll (issue 34's protocol for the
 * repository, ref, agent, run and follow-up members; decision 0075).
 */
export const offeredSessionSchema = {
  type: 'object',
  required: ['id', 'projectId', 'prompt'],
  properties: {
    id: { type: 'string' }, projectId: { type: 'string' }, prompt: { type: 'string' },
    agentCardId: { type: 'string' }, workType: { type: 'string' }, provider: { type: 'string' },
    repository: { ...sessionRepositorySchema, description: 'The repository the session runs on, as it was dispatched' },
    ref: { type: 'string', description: 'The branch, tag or commit the session starts from' },
    agent: { enum: AGENT_PRESETS, description: 'The agent preset the dispatch asked for; the worker uses its own --agent otherwise' },
    run: { type: 'integer', minimum: 1, description: "The session's run: 1 for the first, 2 and on for a follow-up" },
    followUp: {
      type: 'object', required: ['branch'],
      description: "A follow-up's continuation: the agent conversation to resume, when a run reported one, and the branch the runs work on",
      properties: { agentSessionId: { type: 'string' }, branch: { type: 'string' } },
    },
    queuedPrompts: {
      type: 'array',
      items: { type: 'object', required: ['id', 'text'], properties: { id: { type: 'string' }, text: { type: 'string' } } },
    },
  },
} as const;
