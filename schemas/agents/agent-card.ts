/**
 * Wire shapes of agent cards and the marketplace (CONTRACT "Agent cards", spec 4.6/4.7). A card's payload is what an
 * agent runs with: a prompt, a capability manifest (the tools and abilities it may use) and free-form config. All
 * of it lives in snapshots and read models, so every part is bounded.
 */
export const MAX_PROMPT_CHARS = 64 * 1024;
export const MAX_OVERLAY_KEYS = 64;

const uuid = { type: 'string', format: 'uuid' } as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
const description = { type: 'string', maxLength: 4000 } as const;
const prompt = { type: 'string', minLength: 1, maxLength: MAX_PROMPT_CHARS } as const;
/** Capability names like `repo.read`, `tracker.comment`, `shell`. */
const capabilities = {
  type: 'array', maxItems: 100, items: { type: 'string', pattern: '^[a-z][a-z0-9_.:-]{0,99}$' },
} as const;
const config = { type: 'object', maxProperties: 64 } as const;
const model = { type: 'string', minLength: 1, maxLength: 200 } as const;

/** The payload of a card version, as written by its author. */
export const agentCardPayload = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'prompt'],
  properties: { name, description, prompt, capabilities, model, config },
} as const;

export const createAgentCardBody = agentCardPayload;

export const updateAgentCardBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name, description, prompt, capabilities, model, config },
} as const;

/** Overlay keys are dotted paths into the payload (`description`, `config.temperature`). */
export const overlaySchema = {
  type: 'object',
  maxProperties: MAX_OVERLAY_KEYS,
  propertyNames: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$' },
} as const;

export const publishListingBody = {
  type: 'object', additionalProperties: false, required: ['agentCardId'], properties: { agentCardId: uuid },
} as const;

export const installBody = {
  type: 'object', additionalProperties: false, required: ['listingId'], properties: { listingId: uuid, overlay: overlaySchema },
} as const;

const isoTime = { type: 'string', format: 'date-time' } as const;

export const agentCardView = {
  type: 'object',
  required: ['id', 'orgId', 'name', 'version', 'payload', 'createdAt', 'updatedAt'],
  properties: {
    id: uuid, orgId: uuid, name, version: { type: 'integer' }, payload: { type: 'object' },
    install: {
      type: ['object', 'null'],
      properties: { listingId: uuid, pinnedVersion: { type: 'integer' }, overlay: { type: 'object' } },
    },
    createdBy: { type: 'string' }, createdAt: isoTime, updatedAt: isoTime,
  },
} as const;

export const agentCardReply = { type: 'object', required: ['agentCard'], properties: { agentCard: agentCardView } } as const;

export const listingView = {
  type: 'object',
  required: ['id', 'agentCardId', 'publisherOrgId', 'name', 'latestVersion', 'createdAt'],
  properties: {
    id: uuid, agentCardId: uuid, publisherOrgId: uuid, name, description: { type: 'string' }, latestVersion: { type: 'integer' },
    capabilities: { type: 'array', items: { type: 'string' } }, createdAt: isoTime,
  },
} as const;

export const listingReply = { type: 'object', required: ['listing'], properties: { listing: listingView } } as const;
export const listingListReply = {
  type: 'object', required: ['listings', 'nextCursor'],
  properties: { listings: { type: 'array', items: listingView }, nextCursor: { type: ['string', 'null'], description: 'Pass back as cursor for the next page; null on the last' } },
} as const;

export const listingListQuery = {
  type: 'object', additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, description: 'Page size (default 50)' },
    cursor: { type: 'string', maxLength: 200, pattern: '^[A-Za-z0-9_-]+$', description: 'nextCursor of the previous page' },
    publisherOrgId: { ...uuid, description: 'Only this publisher\'s listings' },
    q: { type: 'string', minLength: 1, maxLength: 100, description: 'Text in the listing\'s name or description (case-insensitive)' },
  },
} as const;
export const updatePreviewReply = { type: 'object', required: ['update'], properties: { update: { type: 'object' } } } as const;

// Records: a card as the agent-card actor holds it and the read models store it (actors/kinds/agent-card, storage/agent-cards).

export interface AgentCardPayload {
  readonly name: string;
  readonly description: string;
  readonly prompt: string;
  readonly capabilities: readonly string[];
  readonly model?: string;
  readonly config: Readonly<Record<string, unknown>>;
}

export type Overlay = Readonly<Record<string, unknown>>;

export interface SourceVersion {
  readonly version: number;
  readonly payload: AgentCardPayload;
  readonly createdAt: string;
  readonly changedBy: string;
}

export interface InstallRecord {
  readonly listingId: string;
  readonly sourceCardId: string;
  readonly pinnedVersion: number;
  readonly overlay: Overlay;
}

export interface AgentCardRecord {
  readonly id: string;
  readonly orgId: string;
  readonly version: number;
  /** Authored: the card as written. Installed: the materialized projection (source payload + overlay). */
  readonly payload: AgentCardPayload;
  readonly install: InstallRecord | null;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

const sourceVersion = {
  type: 'object', required: ['version', 'payload', 'createdAt', 'changedBy'],
  properties: { version: { type: 'integer', minimum: 1 }, payload: { type: 'object' }, createdAt: { type: 'string' }, changedBy: { type: 'string' } },
} as const;

/**
 * The agent-card actor's messages. The routes check request bodies against the schemas above before they build a
 * message, so this one checks each message's own fields: what `decide` reads must be there and of its type.
 */
export const agentCardMessageSchema = {
  $id: 'troupe:agent-card-message',
  type: 'object',
  required: ['type', 'orgId', 'by'],
  properties: {
    type: { enum: ['agentCard.create', 'agentCard.update', 'agentCard.publish', 'agentCard.install', 'agentCard.acceptUpdate'] },
    orgId: { type: 'string' }, by: { type: 'string' },
  },
  allOf: [
    { if: { properties: { type: { const: 'agentCard.create' } } }, then: { required: ['payload'], properties: { payload: { type: 'object' } } } },
    { if: { properties: { type: { const: 'agentCard.update' } } }, then: { required: ['changes'], properties: { changes: { type: 'object' } } } },
    {
      if: { properties: { type: { const: 'agentCard.publish' } } },
      then: { required: ['listingId', 'quota'], properties: { listingId: { type: 'string' }, quota: { type: 'integer', minimum: 1 } } },
    },
    {
      if: { properties: { type: { const: 'agentCard.install' } } },
      then: {
        required: ['listingId', 'sourceCardId', 'source', 'overlay'],
        properties: { listingId: { type: 'string' }, sourceCardId: { type: 'string' }, source: sourceVersion, overlay: { type: 'object' } },
      },
    },
    { if: { properties: { type: { const: 'agentCard.acceptUpdate' } } }, then: { required: ['source'], properties: { source: sourceVersion } } },
  ],
} as const;
