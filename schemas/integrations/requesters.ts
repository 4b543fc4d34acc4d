/** HTTP schemas of requester registrations (http/routes/requesters.ts). */
export const createRequesterBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'mode'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
    mode: { enum: ['light', 'strict'] },
    /** Standard base64 of a raw 32-byte Ed25519 public key (44 characters, one '='). */
    publicKey: { type: 'string', minLength: 44, maxLength: 44 },
  },
} as const;

const requester = {
  type: 'object',
  required: ['id', 'orgId', 'name', 'mode', 'publicKey', 'createdAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    orgId: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    mode: { enum: ['light', 'strict'] },
    publicKey: { type: ['string', 'null'] },
    createdAt: { type: 'string' },
  },
} as const;

export const requesterReply = { type: 'object', required: ['requester'], properties: { requester } } as const;
export const requesterListReply = { type: 'object', required: ['requesters'], properties: { requesters: { type: 'array', items: requester } } } as const;
