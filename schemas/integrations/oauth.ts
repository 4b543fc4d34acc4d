/** HTTP schemas of machine clients and the token endpoint (http/routes/oauth.ts). */
export const createM2mClientBody = {
  type: 'object',
  additionalProperties: false,
  required: ['orgId', 'name', 'scopes'],
  properties: {
    orgId: { type: 'string', format: 'uuid' },
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
    scopes: { type: 'array', minItems: 1, maxItems: 3, uniqueItems: true, items: { enum: ['read', 'write', 'admin'] } },
    requesterId: { type: 'string', format: 'uuid' },
  },
} as const;

export const m2mClientReply = {
  type: 'object',
  required: ['clientId', 'clientSecret', 'orgId', 'name', 'scopes', 'requesterId', 'createdAt'],
  properties: {
    clientId: { type: 'string', format: 'uuid' },
    /** Shown once; only its hash is stored. */
    clientSecret: { type: 'string' },
    orgId: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    requesterId: { type: ['string', 'null'] },
    createdAt: { type: 'string' },
  },
} as const;

export const tokenReply = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in', 'scope'],
  properties: {
    access_token: { type: 'string' },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer' },
    scope: { type: 'string' },
  },
  description: 'RFC 6749 §5.1. Errors on this route are RFC 6749 §5.2 bodies {error, error_description} with error one of '
    + 'invalid_request (400), invalid_client (401, with WWW-Authenticate: Basic), unsupported_grant_type (400), invalid_scope (400) '
    + '— not the {error, code} shape of other routes. A body in another media type than form or JSON is 415, an over-large one 413.',
} as const;

/** Longest overlap a rotation may give the old secrets: a week covers a slow weekly deploy. */
export const MAX_ROTATION_OVERLAP_SECONDS = 604_800;
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400;

export const rotateM2mClientBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    /** How long secrets issued before this rotation keep working; 0 ends them at once. */
    overlapSeconds: { type: 'integer', minimum: 0, maximum: MAX_ROTATION_OVERLAP_SECONDS, default: DEFAULT_ROTATION_OVERLAP_SECONDS },
  },
} as const;

export const rotateM2mClientReply = {
  type: 'object',
  required: ['clientId', 'clientSecret', 'previousSecretsExpireAt'],
  properties: {
    clientId: { type: 'string', format: 'uuid' },
    /** Shown once; only its hash is stored. */
    clientSecret: { type: 'string' },
    /** No secret issued before this rotation works from this instant on (one with an earlier expiry ends earlier). */
    previousSecretsExpireAt: { type: 'string' },
  },
} as const;

export const revokeM2mClientReply = {
  type: 'object',
  required: ['clientId', 'revoked', 'revokedAt'],
  properties: {
    clientId: { type: 'string', format: 'uuid' },
    revoked: { const: true },
    /** The first revocation's time; revoking again answers the same. */
    revokedAt: { type: 'string' },
  },
} as const;

const m2mSecretMeta = {
  type: 'object',
  required: ['id', 'createdAt', 'expiresAt', 'active'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    createdAt: { type: 'string' },
    expiresAt: { type: ['string', 'null'] },
    /** Whether the token endpoint accepts it now (not expired; the client's revocation is reported separately). */
    active: { type: 'boolean' },
  },
} as const;

export const m2mClientDetail = {
  type: 'object',
  required: ['clientId', 'orgId', 'name', 'scopes', 'requesterId', 'createdAt', 'revokedAt', 'secrets'],
  properties: {
    clientId: { type: 'string', format: 'uuid' },
    orgId: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    requesterId: { type: ['string', 'null'] },
    createdAt: { type: 'string' },
    revokedAt: { type: ['string', 'null'] },
    secrets: { type: 'array', items: m2mSecretMeta },
  },
} as const;

export const listM2mClientsQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['orgId'],
  properties: { orgId: { type: 'string', format: 'uuid' } },
} as const;

export const m2mClientList = {
  type: 'object',
  required: ['clients'],
  properties: { clients: { type: 'array', items: m2mClientDetail } },
} as const;
