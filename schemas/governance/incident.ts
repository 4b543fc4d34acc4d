/**
 * Wire shapes of incidents: the incident actor's message, the list query and reply, the incident.io webhook
 * result (spec 2.7) and the signing-secret body. Provider text is clipped to these bounds before it is stored.
 */
export const incidentChanges = ['created', 'updated', 'resolved'] as const;
export type IncidentChange = (typeof incidentChanges)[number];

export const INCIDENT_TITLE_MAX = 500;
export const INCIDENT_TEXT_MAX = 4000;
export const INCIDENT_URL_MAX = 2000;

/**
 * The only links an incident keeps: absolute http(s), without whitespace or control characters. People click them on
 * the incidents page, so a provider's `javascript:` or `data:` link is dropped (the incident is kept without it).
 */
const WEB_URL = /^https?:\/\/[^\s\x00-\x1f\x7f]+$/i;
export const incidentUrl = (v: unknown): string | null =>
  (typeof v === 'string' && v.length <= INCIDENT_URL_MAX && WEB_URL.test(v) ? v : null);

const uuid = { type: 'string', format: 'uuid' } as const;
const shortText = { type: ['string', 'null'], maxLength: 200 } as const;

export const incidentMessageSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'orgId', 'source', 'externalId', 'change', 'fields'],
  properties: {
    type: { const: 'incident.record' },
    orgId: uuid,
    source: { type: 'string', minLength: 1, maxLength: 64 },
    externalId: { type: 'string', minLength: 1, maxLength: 200 },
    change: { enum: incidentChanges },
    fields: {
      type: 'object',
      additionalProperties: false,
      properties: {
        title: { type: 'string', maxLength: INCIDENT_TITLE_MAX },
        severity: shortText,
        status: shortText,
        summary: { type: ['string', 'null'], maxLength: INCIDENT_TEXT_MAX },
        url: { type: ['string', 'null'], maxLength: INCIDENT_URL_MAX },
      },
    },
  },
} as const;

const commaList = { type: 'string', maxLength: 500, pattern: '^[A-Za-z0-9_ -]+(,[A-Za-z0-9_ -]+)*$' } as const;

export const listIncidentsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: commaList,
    severity: { type: 'string', minLength: 1, maxLength: 200 },
    source: { type: 'string', minLength: 1, maxLength: 64 },
    limit: { type: 'integer', minimum: 1, maximum: 200 },
    offset: { type: 'integer', minimum: 0, maximum: 1_000_000 },
  },
} as const;

export const incidentSchema = {
  type: 'object',
  required: ['id', 'orgId', 'source', 'externalId', 'title', 'severity', 'status', 'createdAt', 'updatedAt', 'resolvedAt'],
  properties: {
    id: uuid, orgId: uuid, source: { type: 'string' }, externalId: { type: 'string' }, title: { type: 'string' },
    severity: { type: ['string', 'null'] }, status: { type: 'string' }, summary: { type: ['string', 'null'] },
    url: { type: ['string', 'null'] }, createdAt: { type: 'string' }, updatedAt: { type: 'string' },
    resolvedAt: { type: ['string', 'null'] },
  },
} as const;

export const incidentListReply = {
  type: 'object',
  required: ['incidents', 'total', 'limit', 'offset'],
  properties: {
    incidents: { type: 'array', items: incidentSchema },
    total: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' },
  },
} as const;

export const incidentWebhookReply = {
  type: 'object',
  required: ['ok'],
  properties: {
    ok: { type: 'boolean' }, created: { type: 'boolean' }, updated: { type: 'boolean' }, resolved: { type: 'boolean' },
    event_type: { type: 'string' }, incidentId: { type: 'string' }, skipped: { type: 'boolean' },
  },
} as const;

/** `whsec_` + base64 of 24 to 64 bytes, as Standard Webhooks senders issue them. */
export const incidentIoIntegrationBody = {
  type: 'object',
  additionalProperties: false,
  required: ['signingSecret'],
  properties: {
    // The legacy environment secret is not the org's to take: the platform admin gives it to one org (decision 0025).
    signingSecret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$' },
  },
} as const;

/** The platform admin's choice of the one org the legacy TROUPE_INCIDENT_IO_SECRET verifies deliveries for. */
export const incidentIoEnvironmentSecretBody = {
  type: 'object',
  additionalProperties: false,
  required: ['orgId'],
  properties: { orgId: uuid },
} as const;

export const incidentIoEnvironmentSecretReply = {
  type: 'object',
  required: ['orgId', 'previousOrgId'],
  properties: {
    orgId: { anyOf: [uuid, { type: 'null' }] }, previousOrgId: { anyOf: [uuid, { type: 'null' }] },
    webhookUrl: { anyOf: [{ type: 'string' }, { type: 'null' }] },
  },
} as const;

export const incidentWebhookQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { org: { ...uuid, description: 'The receiving org: only its secret is tried (the connect route gives this URL)' } },
} as const;

export const incidentIoIntegrationReply = {
  type: 'object',
  required: ['orgId', 'provider', 'connected', 'secretSource'],
  properties: {
    orgId: uuid, provider: { const: 'incident-io' }, connected: { type: 'boolean' },
    secretSource: { enum: ['org', 'environment'] }, updatedAt: { type: 'string' },
    webhookUrl: { type: 'string', description: 'The path incident.io should deliver to: it names the org, so only its secret is tried' },
  },
} as const;
