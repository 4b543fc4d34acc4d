import type { SessionReply } from '../../actors/kinds/session/index.js';
import { MAX_PROMPT_LENGTH } from '../../schemas/sessions/session-actor.js';
import { sessionRepositorySchema } from '../../schemas/repositories/http.js';
import { dispatchWorkspaceMembers } from './dispatch-workspace.js';
import { dispatchQueueMembers } from '../../schemas/queue-control/concurrency.js';
import { runReportDetail, runReportMembers } from './run-report-schemas.js';

/** The shapes of the session routes (sessions.ts): dispatch, a worker's status report, and the session detail. */

const short = { type: 'string', minLength: 1, maxLength: 200 } as const;
export const sessionIdParam = { type: 'string', pattern: '^[0-9a-f]{16}$' } as const;

export const dispatchBody = {
  type: 'object',
  additionalProperties: false,
  required: ['projectId', 'prompt'],
  properties: {
    projectId: { type: 'string', format: 'uuid' },
    prompt: { type: 'string', minLength: 1, maxLength: MAX_PROMPT_LENGTH },
    agentCardId: short,
    trackerIssue: short,
    workType: short,
    provider: short,
    /** The tracker's own session identifier; the public id is derived from it. Generated when absent. */
    trackerSessionId: { type: 'string', minLength: 1, maxLength: 500 },
    ...dispatchWorkspaceMembers,
    ...dispatchQueueMembers,
  },
} as const;

export const statusBody = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'workerId'],
  properties: {
    status: { enum: ['claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] },
    workerId: { type: 'string', minLength: 1, maxLength: 64 },
    costUsd: { type: 'number', minimum: 0, maximum: 1e9 },
    error: { type: 'string', maxLength: 4000 },
    phase: { type: 'string', maxLength: 200 },
    ...runReportMembers,
  },
} as const;

export const transitionReply = {
  type: 'object', required: ['sessionId', 'previousStatus', 'newStatus'],
  properties: { sessionId: sessionIdParam, previousStatus: { type: 'string' }, newStatus: { type: 'string' } },
} as const;

const nullableString = { type: ['string', 'null'] } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;

export const sessionDetailReply = {
  type: 'object',
  required: [
    'id', 'status', 'orgId', 'project', 'worker', 'prompt', 'provider', 'workType', 'phase', 'error', 'costUsd', 'run', 'prompts',
    'activities', 'createdAt', 'updatedAt', 'timeline', 'can', 'agent', 'usage', 'workspace', 'pullRequest',
  ],
  properties: {
    id: sessionIdParam, status: { type: 'string' }, orgId: { type: 'string' },
    project: {
      type: 'object', required: ['id', 'name', 'slug'],
      properties: { id: { type: 'string' }, name: nullableString, slug: nullableString },
    },
    worker: {
      type: ['object', 'null'], required: ['id', 'hostname', 'lastSeenAt', 'holdsClaim'],
      description: 'The worker holding the session, or the last one that held it (holdsClaim false); null before any claimed it',
      properties: { id: { type: 'string' }, hostname: nullableString, lastSeenAt: nullableTime, holdsClaim: { type: 'boolean' } },
    },
    trackerSessionId: nullableString, trackerIssue: nullableString, waitingForIssueLock: { type: 'boolean' },
    prompt: { type: 'string' }, agentCardId: nullableString, workType: nullableString, provider: nullableString,
    repository: {
      oneOf: [{ type: 'null' }, sessionRepositorySchema],
      description: 'The project repository the session runs on, as it was when dispatched; null when it names none',
    },
    ref: { ...nullableString, description: 'The branch, tag or commit the session starts from' },
    priority: { type: 'integer', minimum: 0, maximum: 9, description: 'Within its project, offered to workers before sessions of lower priority, oldest first within one; projects take turns (decisions 0081, 0085)' },
    concurrencyKey: { ...nullableString, description: "The key the project's concurrency limit counts the session under; null for none" },
    phase: nullableString, error: nullableString, costUsd: { type: 'number' },
    run: { type: 'integer', description: 'How many times the session was dispatched (a prompt after it ended dispatches it again)' },
    requestedBy: nullableString,
    stopReason: { ...nullableString, description: 'Why the server stopped the current run (`budget`: its cost passed the project\'s per-session budget, decision 0080); null otherwise' },
    workflowRun: {
      type: ['object', 'null'], required: ['runId', 'workflowId', 'version'],
      description: 'The workflow run (and so the pinned version) whose agent step dispatched the session',
      properties: { runId: { type: 'string' }, workflowId: { type: 'string' }, version: { type: 'integer' } },
    },
    prompts: {
      type: 'array',
      items: {
        type: 'object', required: ['id', 'text', 'run', 'queued', 'createdAt'],
        properties: {
          id: { type: 'string' }, text: { type: 'string' }, run: { type: 'integer' }, queued: { type: 'boolean' },
          createdAt: nullableTime, deliveredAt: nullableTime, archivedAt: nullableTime,
        },
      },
    },
    activities: {
      type: 'array', description: "The session's newest 200 activities, oldest first: status notes, provider notes, the agent's tool steps (kind `tool`)",
      items: {
        type: 'object', required: ['id', 'kind', 'body', 'createdAt'],
        properties: { id: { type: 'string' }, kind: { type: 'string' }, body: { type: 'string' }, createdAt: nullableTime },
      },
    },
    createdAt: nullableTime, updatedAt: nullableTime, claimedAt: nullableTime, startedAt: nullableTime, finishedAt: nullableTime,
    lastToolCalledAt: nullableTime,
    timeline: {
      type: 'array', description: 'Every status the session moved through, oldest first (run counts dispatches)',
      items: {
        type: 'object', required: ['from', 'status', 'run', 'at'],
        properties: { from: { type: 'string' }, status: { type: 'string' }, run: { type: 'integer' }, workerId: { type: ['string', 'null'] }, at: { type: 'string' } },
      },
    },
    output: {
      type: ['object', 'null'], required: ['tail', 'totalBytes', 'truncated', 'updatedAt'],
      description: "The last 64 KiB of the current run's agent output as its worker relayed it (null until the agent prints)",
      properties: { tail: { type: 'string' }, totalBytes: { type: 'integer' }, truncated: { type: 'boolean' }, updatedAt: { type: 'string' } },
    },
    trackerComments: {
      type: 'array',
      description: 'The comments each end (or stop) of the session owed the Linear or GitHub issue it came from: pending, sent, or failed with the reason',
      items: {
        type: 'object', required: ['tracker', 'issue', 'kind', 'run', 'sessionStatus', 'status', 'attempts', 'lastError', 'url', 'sentAt', 'createdAt'],
        properties: {
          tracker: { enum: ['linear', 'github'] }, issue: { type: 'string' }, kind: { enum: ['terminal', 'stop', 'agent'] }, run: { type: 'integer' },
          sessionStatus: { type: 'string' }, status: { enum: ['pending', 'sent', 'failed'] }, attempts: { type: 'integer' },
          lastError: nullableString, url: nullableString, sentAt: nullableTime, createdAt: { type: 'string', format: 'date-time' },
        },
      },
    },
    ...runReportDetail,
    can: {
      type: 'object', required: ['stop', 'prompt'], description: 'Whether the caller may stop or prompt it (the routes still decide)',
      properties: { stop: { type: 'boolean' }, prompt: { type: 'boolean' } },
    },
  },
} as const;

/** The session actor's reply as the routes answer it: the reply schemas name its members, not its `kind`. */
export function withoutKind(reply: SessionReply): Record<string, unknown> {
  const { kind: _kind, ...rest } = reply;
  return rest;
}
