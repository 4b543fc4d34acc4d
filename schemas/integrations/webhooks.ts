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
    accountIds: {
      type: 'array', maxItems: 10, uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' },
      description: "The provider's own ids of the accounts whose deliveries come to this org without ?org= (decision 0070): "
        + 'GitHub: the hook\'s X-GitHub-Hook-Installation-Target-ID, or the repository owner\'s id or login; Linear: the '
        + "workspace's organizationId; CircleCI: organization.id; Vercel: the team id (the user id for a personal account). "
        + 'Compared case-insensitively and kept lower-cased. An id may be registered by at most 5 orgs (409 past that); '
        + 'each delivery is checked against the secrets of those orgs only. Absent: the ids stay as they were; [] removes them.',
    },
  },
} as const;

export const providerIntegrationReply = {
  type: 'object',
  required: ['orgId', 'provider', 'connected', 'projectId', 'webhookUrl', 'accountIds', 'updatedAt'],
  properties: {
    orgId: { type: 'string', format: 'uuid' },
    provider: { enum: ['linear', 'github', 'circleci', 'vercel'] },
    connected: { const: true },
    projectId: { type: ['string', 'null'] },
    /** Path to give the provider; `?org=` lets verification try only this org's secret. */
    webhookUrl: { type: 'string' },
    /** The provider account ids that route a delivery without `?org=` here, lower-cased. */
    accountIds: { type: 'array', items: { type: 'string' } },
    updatedAt: { type: 'string' },
  },
} as const;

export const providerWebhookQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    org: {
      type: 'string', format: 'uuid',
      description: "The receiving org: a delivery is checked against its secret only. Without it, against the secrets of the orgs that registered the delivery's provider account id (accountIds)",
    },
  },
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
