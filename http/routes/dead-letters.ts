import type { Deps } from '../../actors/services/deps.js';
import type { Route } from '../types.js';
import { route } from '../route.js';

/** Message ids as the transports make them, a digest for unreadable ones, or another publisher's printable id. */
const deadLetterId = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' } as const;

const deadLetterSchema = {
  type: 'object',
  required: ['id', 'kind', 'address', 'reason', 'deadLetteredAt', 'bytes', 'payload'],
  properties: {
    id: { type: 'string' },
    kind: { enum: ['ask', 'tell', 'unreadable'] },
    address: { type: ['string', 'null'] },
    reason: { type: 'string' },
    deadLetteredAt: { type: ['string', 'null'], format: 'date-time' },
    bytes: { type: 'integer', minimum: 0 },
    payload: { description: 'The message, when readable and at most 16 KiB; null otherwise' },
  },
};

const pageSchema = {
  type: 'object',
  required: ['items', 'total', 'bound', 'strategy', 'overflowed'],
  properties: {
    items: { type: 'array', items: deadLetterSchema },
    total: { type: 'integer', minimum: 0 },
    bound: { type: 'integer', minimum: 1 },
    strategy: { enum: ['at-least-once', 'at-most-once', 'in-process'] },
    overflowed: { type: 'integer', minimum: 0 },
  },
};

/** Exactly one of the two: the ids to act on, or every dead letter (never implied by an empty body). */
const selectionSchema = {
  type: 'object',
  oneOf: [
    { required: ['ids'], properties: { ids: { type: 'array', minItems: 1, maxItems: 1000, uniqueItems: true, items: deadLetterId } }, additionalProperties: false },
    { required: ['all'], properties: { all: { const: true } }, additionalProperties: false },
  ],
} as const;

const outcomeSchema = {
  type: 'object',
  required: ['done', 'notFound', 'unreadable'],
  properties: {
    done: { type: 'array', items: { type: 'string' } },
    notFound: { type: 'array', items: { type: 'string' } },
    unreadable: { type: 'array', items: { type: 'string' } },
  },
};

const listQuery = { type: 'object', additionalProperties: false, properties: { limit: { type: 'integer', minimum: 0, maximum: 1000 } } };

/**
 * Operators' view of the messages no node could handle (decision 0048): the cluster's dead-letter queue on RabbitMQ,
 * this node's in-memory list on the embedded transport. Platform admin only: dead letters hold any org's messages.
 */
export function deadLetterRoutes(): Route<Deps>[] {
  return [
    {
      method: 'get', path: '/api/admin/dead-letters', auth: 'admin', tags: ['operations'],
      summary: 'Dead letters, oldest first (at most `limit`, default 50), with the total kept, the bound and the dead-letter strategy',
      querySchema: listQuery, responseSchema: pageSchema,
      handler: async (req, deps) => {
        const limit = req.query.get('limit');
        return { body: await deps.transport.deadLetters.list(limit === null ? 50 : Number(limit)) };
      },
    },
    route({
      method: 'post', path: '/api/admin/dead-letters/replay', auth: 'admin', tags: ['operations'],
      summary: 'Send dead letters again to their addresses, as tells with a fresh time to live (`{ids}` or `{all: true}`); unreadable ones are left for purge',
      bodySchema: selectionSchema, responseSchema: outcomeSchema,
      handler: async (req, deps) => ({ body: await deps.transport.deadLetters.replay(req.body) }),
    }),
    route({
      method: 'post', path: '/api/admin/dead-letters/purge', auth: 'admin', tags: ['operations'],
      summary: 'Remove dead letters for good (`{ids}` or `{all: true}`)',
      bodySchema: selectionSchema, responseSchema: outcomeSchema,
      handler: async (req, deps) => ({ body: await deps.transport.deadLetters.purge(req.body) }),
    }),
  ];
}
