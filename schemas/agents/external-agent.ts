/** Wire shapes of external (A2A) agents: spec 2.7 and 4.5. */

export const trustLevels = ['untrusted', 'verified', 'internal'] as const;
export type TrustLevel = (typeof trustLevels)[number];

export const registerExternalAgentBody = {
  type: 'object', additionalProperties: false, required: ['url'],
  properties: { url: { type: 'string', format: 'uri', maxLength: 2048, pattern: '^https?://' } },
} as const;

export const updateExternalAgentBody = {
  type: 'object', additionalProperties: false, required: ['trustLevel'], properties: { trustLevel: { enum: trustLevels } },
} as const;

const isoTime = { type: 'string', format: 'date-time' } as const;

export const externalAgentView = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'orgId', 'url', 'trustLevel', 'card', 'lastFetchedAt', 'createdAt', 'updatedAt', 'reachable'],
  properties: {
    id: { type: 'string' }, orgId: { type: 'string' }, url: { type: 'string', format: 'uri' }, trustLevel: { enum: trustLevels },
    card: {
      type: 'object', additionalProperties: false, required: ['name', 'url', 'version', 'description', 'skills'],
      properties: {
        name: { type: 'string' }, url: { type: 'string' }, version: { type: 'string' }, description: { type: 'string' },
        skills: { type: 'array', items: { type: 'object' } },
      },
    },
    lastFetchedAt: { type: ['string', 'null'], format: 'date-time' }, createdAt: isoTime, updatedAt: isoTime, reachable: { type: 'boolean' },
  },
} as const;

export const externalAgentReply = { type: 'object', required: ['agent'], properties: { agent: externalAgentView } } as const;
export const externalAgentListReply = { type: 'object', required: ['agents'], properties: { agents: { type: 'array', items: externalAgentView } } } as const;

export interface AgentSkill {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly tags: readonly string[];
}

export interface ExternalAgentCard {
  readonly name: string;
  readonly url: string;
  readonly version: string;
  readonly description: string;
  readonly skills: readonly AgentSkill[];
}


export interface ExternalAgentRecord {
  readonly id: string;
  readonly orgId: string;
  readonly url: string;
  readonly trustLevel: TrustLevel;
  readonly card: ExternalAgentCard;
  readonly reachable: boolean;
  readonly lastFetchedAt: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** The external-agent actor's messages: what `decide` reads must be there and of its type (cards are fetched by the route). */
export const externalAgentMessageSchema = {
  $id: 'troupe:external-agent-message',
  type: 'object',
  required: ['type', 'orgId'],
  properties: {
    type: { enum: ['externalAgent.register', 'externalAgent.setTrust', 'externalAgent.refreshed'] },
    orgId: { type: 'string' },
  },
  allOf: [
    {
      if: { properties: { type: { const: 'externalAgent.register' } } },
      then: {
        required: ['url', 'card', 'fetchedAt', 'by'],
        properties: { url: { type: 'string' }, card: { type: ['object', 'null'] }, fetchedAt: { type: 'number' }, by: { type: 'string' } },
      },
    },
    {
      if: { properties: { type: { const: 'externalAgent.setTrust' } } },
      then: { required: ['trustLevel', 'by'], properties: { trustLevel: updateExternalAgentBody.properties.trustLevel, by: { type: 'string' } } },
    },
    {
      if: { properties: { type: { const: 'externalAgent.refreshed' } } },
      then: { required: ['card', 'fetchedAt'], properties: { card: { type: ['object', 'null'] }, fetchedAt: { type: 'number' } } },
    },
  ],
} as const;
