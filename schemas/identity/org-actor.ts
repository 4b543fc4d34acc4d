/**
 * Wire shapes of the org actor: its messages, replies and snapshot. The actor validates every message against
 * `orgMessageSchema` before `decide` sees it; tests round-trip state and replies through these.
 */
const uuid = { type: 'string', format: 'uuid' } as const;
const sha256Hex = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const;
const lookupPrefix = { type: 'string', pattern: '^[0-9A-Za-z]{8}$' } as const;
export const scopeSchema = { type: 'string', pattern: '^[a-z][a-z0-9:._-]{0,63}$' } as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;

export const orgMessageSchema = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'keyId', 'name', 'prefix', 'hash', 'scopes', 'requesterId', 'createdBy'],
      properties: {
        type: { const: 'org.issueApiKey' },
        keyId: uuid,
        name,
        prefix: lookupPrefix,
        hash: sha256Hex,
        scopes: { type: 'array', maxItems: 32, uniqueItems: true, items: scopeSchema },
        requesterId: { type: ['string', 'null'], minLength: 1, maxLength: 200 },
        createdBy: { oneOf: [uuid, { type: 'null' }] },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'keyId'],
      properties: { type: { const: 'org.revokeApiKey' }, keyId: uuid },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'tokenId', 'name', 'prefix', 'hash', 'projects'],
      properties: {
        type: { const: 'org.issueRegistrationToken' },
        tokenId: uuid,
        name,
        prefix: lookupPrefix,
        hash: sha256Hex,
        projects: { type: 'array', maxItems: 100, uniqueItems: true, items: uuid },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'tokenId'],
      properties: { type: { const: 'org.revokeRegistrationToken' }, tokenId: uuid },
    },
  ],
} as const;

const apiKeyMeta = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'prefix', 'hash', 'scopes', 'requesterId', 'createdBy', 'createdAt', 'revokedAt'],
  properties: {
    id: uuid, name, prefix: lookupPrefix, hash: sha256Hex,
    scopes: { type: 'array', items: scopeSchema },
    requesterId: { type: ['string', 'null'] },
    createdBy: { type: ['string', 'null'] },
    createdAt: { type: 'integer' },
    revokedAt: { type: ['integer', 'null'] },
  },
} as const;

const registrationTokenMeta = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'prefix', 'hash', 'projects', 'createdAt', 'revokedAt'],
  properties: {
    id: uuid, name, prefix: lookupPrefix, hash: sha256Hex,
    projects: { type: 'array', items: uuid },
    createdAt: { type: 'integer' },
    revokedAt: { type: ['integer', 'null'] },
  },
} as const;

export const orgStateSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['orgId', 'apiKeys', 'registrationTokens'],
  properties: {
    orgId: { type: 'string' },
    apiKeys: { type: 'object', additionalProperties: apiKeyMeta },
    registrationTokens: { type: 'object', additionalProperties: registrationTokenMeta },
  },
} as const;

export const orgReplySchema = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'name', 'prefix', 'scopes', 'requesterId', 'createdAt'],
      properties: {
        id: uuid, name, prefix: lookupPrefix,
        scopes: { type: 'array', items: scopeSchema },
        requesterId: { type: ['string', 'null'] },
        createdAt: { type: 'integer' },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'name', 'projects', 'createdAt'],
      properties: { id: uuid, name, projects: { type: 'array', items: uuid }, createdAt: { type: 'integer' } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'revokedAt', 'alreadyRevoked'],
      properties: { id: uuid, revokedAt: { type: 'integer' }, alreadyRevoked: { type: 'boolean' } },
    },
  ],
} as const;

export interface ApiKeyMeta {
  readonly id: string;
  readonly name: string;
  readonly prefix: string;
  readonly hash: string;
  readonly scopes: readonly string[];
  readonly requesterId: string | null;
  readonly createdBy: string | null;
  readonly createdAt: number;
  readonly revokedAt: number | null;
}

export interface RegistrationTokenMeta {
  readonly id: string;
  readonly name: string;
  readonly prefix: string;
  readonly hash: string;
  readonly projects: readonly string[];
  readonly createdAt: number;
  readonly revokedAt: number | null;
}
