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
