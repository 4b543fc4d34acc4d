import { mutationViewSchema } from '../sessions/daemon.js';

/**
 * Replies of the queue controls (issue 36, decisions 0079, 0085): pausing and resuming a project's queue and a worker, and
 * draining a worker. Pausing what is paused, or resuming what runs, answers the same shape with nothing changed.
 */
const pauseMembers = {
  paused: { type: 'boolean' },
  pausedAt: { type: ['string', 'null'], format: 'date-time', description: 'When the pause began; null while not paused' },
  pausedBy: { type: ['string', 'null'], description: 'Who paused: `user:<id>`, `apiKey:<id>` or `machine:<id>`; null while not paused' },
} as const;

export const projectQueuePauseReply = {
  type: 'object',
  required: ['projectId', 'paused', 'pausedAt', 'pausedBy'],
  properties: { projectId: { type: 'string', format: 'uuid' }, ...pauseMembers },
} as const;

const weight = {
  type: 'integer', minimum: 1, maximum: 100,
  description: "The project's share of its org's offer rounds (decision 0085): each round offers every project with pending "
    + 'sessions up to this many before the next project; 1 when never set',
} as const;

export const projectQueueReply = {
  type: 'object',
  required: ['projectId', 'paused', 'pausedAt', 'pausedBy', 'pending', 'weight'],
  properties: {
    projectId: { type: 'string', format: 'uuid' }, ...pauseMembers,
    pending: { type: 'integer', minimum: 0, description: 'Sessions of the project waiting to be claimed (while paused, they wait for the resume)' },
    weight,
  },
} as const;

/** `PUT /api/projects/{projectId}/queue`: the project's weight in the org's fair offer rounds. */
export const projectQueueBody = {
  type: 'object',
  additionalProperties: false,
  required: ['weight'],
  properties: { weight },
} as const;

export const workerPauseReply = {
  type: 'object',
  required: ['workerId', 'paused', 'pausedAt', 'pausedBy'],
  properties: { workerId: { type: 'string' }, ...pauseMembers },
} as const;

export const workerDrainReply = {
  type: 'object',
  required: ['workerId', 'mutation'],
  properties: {
    workerId: { type: 'string' },
    mutation: { ...mutationViewSchema, description: 'The `worker.drain` mutation: delivered with the worker\'s next heartbeat, which it is nudged to send at once' },
  },
} as const;
