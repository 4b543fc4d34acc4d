import { MAX_PROMPT_LENGTH } from '../sessions/session-actor.js';

/** Messages of the `provider-event` actor (actors/integrations/webhooks/machine.ts), checked on admission. */
const uuid = { type: 'string', format: 'uuid' } as const;
const label = { type: 'string', minLength: 1, maxLength: 200 } as const;

export const providerEventMessageSchema = {
  $id: 'troupe:integrations/provider-event-message',
  oneOf: [
    {
      type: 'object', additionalProperties: false,
      required: ['type', 'orgId', 'provider', 'eventType', 'projectId', 'action'],
      properties: {
        type: { const: 'providerEvent.route' },
        orgId: uuid,
        provider: { enum: ['linear', 'github', 'circleci', 'vercel'] },
        eventType: label,
        projectId: { anyOf: [uuid, { type: 'null' }] },
        action: {
          oneOf: [
            {
              type: 'object', additionalProperties: false, required: ['kind', 'trackerSessionId', 'trackerIssue', 'prompt'],
              properties: {
                kind: { const: 'dispatchSession' },
                trackerSessionId: { type: 'string', minLength: 1, maxLength: 500 },
                trackerIssue: { anyOf: [label, { type: 'null' }] },
                prompt: { type: 'string', minLength: 1, maxLength: MAX_PROMPT_LENGTH },
              },
            },
            {
              // A failed CI job noted on the session its branch names (routing.ts).
              type: 'object', additionalProperties: false, required: ['kind', 'sessionId', 'activityKind', 'body'],
              properties: {
                kind: { const: 'recordSessionActivity' },
                sessionId: { type: 'string', pattern: '^[0-9a-f]{16}$' },
                activityKind: label,
                body: { type: 'string', minLength: 1, maxLength: 4000 },
              },
            },
            {
              type: 'object', additionalProperties: false, required: ['kind', 'reason'],
              properties: { kind: { const: 'ignore' }, reason: { type: 'string', maxLength: 500 } },
            },
          ],
        },
      },
    },
    {
      type: 'object', additionalProperties: false, required: ['type', 'sessionId'],
      properties: { type: { const: 'providerEvent.dispatched' }, sessionId: { type: 'string', pattern: '^[0-9a-f]{16}$' } },
    },
    {
      type: 'object', additionalProperties: false, required: ['type', 'error'],
      properties: { type: { const: 'providerEvent.dispatchFailed' }, error: { type: 'string', maxLength: 4000 } },
    },
  ],
} as const;
