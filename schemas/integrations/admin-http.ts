/**
 * The org's integrations as one listing (http/routes/integration-admin.ts, issue 37 §2): the OAuth providers this
 * deployment can connect, each with the org's connection if any, and the webhook providers with whether a signing
 * secret is stored and the URL deliveries go to. Never a token or a secret.
 */
const timestamp = { type: 'string', format: 'date-time' } as const;

const connectionSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'scope', 'connectedBy', 'connectedAt', 'expiresAt'],
  properties: {
    status: { enum: ['connected', 'reauthorization_required'], description: 'reauthorization_required: the provider refused the stored grant; connect again' },
    scope: { type: ['string', 'null'] },
    connectedBy: { type: 'string', description: 'The user who connected it' },
    connectedAt: timestamp,
    expiresAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const integrationsReply = {
  type: 'object',
  additionalProperties: false,
  required: ['oauth', 'webhooks'],
  properties: {
    oauth: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['provider', 'configured', 'connection'],
        properties: {
          provider: { enum: ['linear', 'github', 'sentry'] },
          configured: { type: 'boolean', description: "Whether this deployment has the provider's OAuth app (TROUPE_<PROVIDER>_OAUTH_CLIENT_ID and _SECRET)" },
          connection: { oneOf: [connectionSchema, { type: 'null' }] },
        },
      },
    },
    webhooks: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['provider', 'connected', 'webhookUrl', 'projectId', 'updatedAt'],
        properties: {
          provider: { enum: ['linear', 'github', 'circleci', 'vercel'] },
          connected: { type: 'boolean', description: 'Whether a signing secret is stored (set it with PUT /api/org/{orgId}/integrations/{provider})' },
          webhookUrl: { type: 'string', description: "The path to give the provider as its webhook URL, after this service's address" },
          projectId: { type: ['string', 'null'] },
          updatedAt: { type: ['string', 'null'], format: 'date-time' },
        },
      },
    },
  },
} as const;

export const disconnectedReply = {
  type: 'object', additionalProperties: false, required: ['provider', 'connected'],
  properties: { provider: { type: 'string' }, connected: { const: false } },
} as const;
