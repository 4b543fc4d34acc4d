/** HTTP schemas of provider webhooks (http/routes/provider-webhooks.ts). */
export const providerIntegrationBody = {
  type: 'object',
  additionalProperties: false,
  required: ['signingSecret'],
  properties: {
    /** The secret configured at the provider; stored sealed with the master key, never returned. */
    signingSecret: { type: 'string', minLength: 8, maxLength: 512, pattern: '^[\\x21-\\x7e]+$' },
    /** Where sessions started by this provider's events go; default: the org's first project. */
    projectId: { type: 'string', format: 'uuid' },
  },
} as const;

export const providerIntegrationReply = {
  type: 'object',
  required: ['orgId', 'provider', 'connected', 'projectId', 'webhookUrl', 'updatedAt'],
  properties: {
    orgId: { type: 'string', format: 'uuid' },
    provider: { enum: ['linear', 'github', 'circleci', 'vercel'] },
    connected: { const: true },
    projectId: { type: ['string', 'null'] },
    /** Path to give the provider; `?org=` lets verification try only this org's secret. */
    webhookUrl: { type: 'string' },
    updatedAt: { type: 'string' },
  },
} as const;

export const providerWebhookQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['org'],
  properties: { org: { type: 'string', format: 'uuid', description: 'The receiving org: a delivery is checked against its secret only' } },
} as const;

export const providerWebhookReply = {
  type: 'object',
  required: ['ok', 'eventId', 'correlationId', 'duplicate'],
  properties: {
    ok: { const: true },
    eventId: { type: 'string', format: 'uuid' },
    correlationId: { type: 'string' },
    duplicate: { type: 'boolean' },
  },
} as const;
