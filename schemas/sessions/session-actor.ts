import { AGENT_PRESETS, MAX_REF_LENGTH, MAX_REPOSITORY_NAME_LENGTH, MAX_REPOSITORY_URL_LENGTH, REF_PATTERN } from '../repositories/repository.js';
import { dispatchQueueMembers } from '../queue-control/concurrency.js';

/**
 * Wire shapes of the session actor's messages. The actor validates every message against `sessionMessageSchema`
 * before `decide` sees it (the HTTP bodies are checked by the route schemas in ./http.ts first).
 */
const uuid = { type: 'string', format: 'uuid' } as const;
const shortText = { type: 'string', minLength: 1, maxLength: 200 } as const;
const nullableShort = { type: ['string', 'null'], minLength: 1, maxLength: 200 } as const;
/** Prompts are agent instructions; 64 KiB leaves room for pasted context without letting one row grow without bound. */
export const MAX_PROMPT_LENGTH = 65_536;
const promptText = { type: 'string', minLength: 1, maxLength: MAX_PROMPT_LENGTH } as const;
const reportable = { enum: ['claimed', 'running', 'paused', 'finalizing', 'completed', 'failed', 'stopped'] } as const;

export const sessionMessageSchema = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'orgId', 'projectId', 'trackerSessionId', 'prompt', 'agentCardId', 'trackerIssue', 'workType', 'provider', 'requestedBy'],
      properties: {
        type: { const: 'session.dispatch' },
        orgId: uuid,
        projectId: uuid,
        trackerSessionId: { type: 'string', minLength: 1, maxLength: 500 },
        prompt: promptText,
        agentCardId: nullableShort,
        trackerIssue: nullableShort,
        workType: nullableShort,
        provider: nullableShort,
        requestedBy: shortText,
        // Optional: dispatches sent before repositories existed (a rolling upgrade) carry none.
        repository: {
          oneOf: [
            { type: 'null' },
            {
              type: 'object', additionalProperties: false, required: ['id', 'url', 'name', 'defaultBranch'],
              properties: {
                id: uuid, url: { type: 'string', minLength: 1, maxLength: MAX_REPOSITORY_URL_LENGTH },
                name: { type: 'string', minLength: 1, maxLength: MAX_REPOSITORY_NAME_LENGTH }, defaultBranch: { type: 'string', minLength: 1, maxLength: MAX_REF_LENGTH, pattern: REF_PATTERN },
              },
            },
          ],
        },
        ref: { oneOf: [{ type: 'null' }, { type: 'string', minLength: 1, maxLength: MAX_REF_LENGTH, pattern: REF_PATTERN }] },
        agent: { oneOf: [{ type: 'null' }, { enum: AGENT_PRESETS }] },
        priority: { type: 'integer', minimum: 0, maximum: 9 },
        concurrencyKey: { oneOf: [{ type: 'null' }, dispatchQueueMembers.concurrencyKey] },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'status', 'workerId', 'orgId', 'projectIds'],
      properties: {
        type: { const: 'session.transition' },
        status: reportable,
        workerId: shortText,
        // The reporting worker's org and projects (its runtime token's): the actor answers NOT_FOUND for a session
        // outside them, so the route need not read the session's scope first.
        orgId: uuid,
        projectIds: { type: 'array', maxItems: 1000, items: uuid },
        costUsd: { type: 'number', minimum: 0, maximum: 1e9 },
        error: { type: 'string', maxLength: 4000 },
        phase: { type: 'string', maxLength: 200 },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'requestedBy'],
      properties: {
        type: { const: 'session.stop' }, requestedBy: shortText,
        // Why the server stopped it (a budget, a superseding session), and what its audit entry says of it.
        reason: shortText,
        details: { type: 'object', maxProperties: 8, additionalProperties: { type: ['string', 'number', 'null'], maxLength: 500 } },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'promptId', 'prompt', 'requestedBy'],
      properties: { type: { const: 'session.prompt' }, promptId: shortText, prompt: promptText, requestedBy: shortText },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'workerId'],
      properties: { type: { const: 'session.leaseExpired' }, workerId: shortText },
    },
  ],
} as const;
