/**
 * The `data` of the events the org's live streams send (http/routes/streams.ts, decision 0012). They appear in the
 * OpenAPI document as components, so clients get their types from the generator like every reply.
 */
const iso = { type: 'string', format: 'date-time' } as const;

export const sessionStatusEventSchema = {
  type: 'object',
  required: ['sessionId', 'orgId', 'projectId', 'previousStatus', 'status', 'epoch', 'at'],
  properties: {
    sessionId: { type: 'string' }, orgId: { type: 'string' }, projectId: { type: 'string' },
    previousStatus: { type: 'string' }, status: { type: 'string' },
    epoch: { type: 'integer', description: 'The run the change belongs to (a terminal session prompted again starts the next)' },
    at: { ...iso, description: 'When the session decided the change' },
  },
} as const;

export const interviewDeltaEventSchema = {
  type: 'object',
  required: ['interviewId', 'seq', 'tokens', 'at'],
  properties: {
    interviewId: { type: 'string', description: "The interview; a session's agent output streams under the session's id" },
    seq: { type: 'integer', description: 'Position of the frame among those its ingesting node published for the interview' },
    tokens: { type: 'array', items: { type: 'string' }, description: 'Text deltas in order; their concatenation is the output' },
    at: iso,
  },
} as const;

export const streamResetEventSchema = {
  type: 'object',
  required: ['reason'],
  properties: { reason: { type: 'string' } },
  description: 'Events after the Last-Event-ID sent are no longer available: reload the state, then keep listening',
} as const;

export const streamResetEvent = { reset: { schemaName: 'StreamResetEvent', schema: streamResetEventSchema } } as const;
