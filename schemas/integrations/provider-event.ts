import { MAX_PROMPT_LENGTH } from '../sessions/session-actor.js';

/** Messages of the `provider-event` actor (actors/services/integrations/webhooks/machine.ts), checked on admission. */
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
              // Published workflows whose webhook trigger matches the delivery; the payload becomes each run's input.
              type: 'object', additionalProperties: false, required: ['kind', 'runs', 'input'],
              properties: {
                kind: { const: 'startRuns' },
                runs: {
                  type: 'array', minItems: 1, maxItems: 20,
                  items: {
                    type: 'object', additionalProperties: false, required: ['workflowId', 'projectId', 'version'],
                    properties: { workflowId: uuid, projectId: uuid, version: { type: 'integer', minimum: 1 } },
                  },
                },
                input: { type: 'object' },
                note: { type: 'string', maxLength: 500 },
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
    {
      type: 'object', additionalProperties: false, required: ['type', 'runIds', 'failures'],
      properties: {
        type: { const: 'providerEvent.runsStarted' },
        runIds: { type: 'array', maxItems: 20, items: uuid },
        failures: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 1000 } },
      },
    },
  ],
} as const;
