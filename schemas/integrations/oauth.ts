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
