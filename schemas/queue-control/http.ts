import { mutationViewSchema } from '../sessions/daemon.js';

/**
 * Replies of the queue controls (issue 36, decision 0079): pausing and resuming a project's queue and a worker, and
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

export const projectQueueReply = {
  type: 'object',
  required: ['projectId', 'paused', 'pausedAt', 'pausedBy', 'pending'],
  properties: {
    projectId: { type: 'string', format: 'uuid' }, ...pauseMembers,
    pending: { type: 'integer', minimum: 0, description: 'Sessions of the project waiting to be claimed (while paused, they wait for the resume)' },
  },
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
