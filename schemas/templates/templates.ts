import { MAX_DEFINITION_BYTES } from '../workflows/definition.js';

/**
 * Wire and message schemas of workflow templates (actors/kinds/template). A slug is lower-case letters, digits and
 * inner hyphens: it is part of the actor address and of URLs, so nothing else is allowed in it.
 */
export const TEMPLATE_SLUG_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$';
export const templateSlugPattern = new RegExp(TEMPLATE_SLUG_PATTERN);

const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
const description = { type: 'string', maxLength: 4000 } as const;
const definitionYaml = { type: 'string', minLength: 1, maxLength: MAX_DEFINITION_BYTES } as const;
const changeReason = { type: 'string', maxLength: 1000 } as const;

/** `PUT /api/templates/{slug}`: the whole draft, replacing the previous one. */
export const putTemplateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'definitionYaml'],
  properties: {
    name,
    description,
    definitionYaml,
    /** The draft revision the editor started from; another edit in between is 409 instead of being overwritten. */
    expectedRevision: { type: 'integer', minimum: 0 },
  },
} as const;

export const publishTemplateBody = {
  type: 'object',
  additionalProperties: false,
  properties: { changeReason },
} as const;

const content = {
  type: 'object', additionalProperties: false, required: ['name', 'description', 'definitionYaml'],
  properties: { name, description, definitionYaml },
} as const;
const by = { type: 'string', minLength: 1, maxLength: 200 } as const;
const uuid = { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' } as const;

export const templateMessageSchema = {
  oneOf: [
    {
      type: 'object', additionalProperties: false, required: ['type', 'orgId', 'slug', 'content', 'by'],
      properties: {
        type: { const: 'template.saveDraft' }, orgId: uuid, slug: { type: 'string', pattern: TEMPLATE_SLUG_PATTERN }, content, by,
        expectedRevision: { type: 'integer', minimum: 0 },
      },
    },
    {
      type: 'object', additionalProperties: false, required: ['type', 'orgId', 'by', 'changeReason'],
      properties: { type: { const: 'template.publish' }, orgId: uuid, by, changeReason: { type: ['string', 'null'], maxLength: 1000 } },
    },
  ],
} as const;

const str = { type: 'string' } as const;
const liveVersion = { type: ['integer', 'null'], description: 'The published version runs use; null before the first publish' } as const;

const versionSummary = {
  type: 'object',
  required: ['version', 'name', 'description', 'definitionYaml', 'definitionVersion', 'schemaHash', 'publishedBy', 'publishedAt'],
  properties: {
    version: { type: 'integer' }, name: str, description: str, definitionYaml: str, definitionVersion: str, schemaHash: str,
    publishedBy: str, changeReason: { type: ['string', 'null'] }, publishedAt: str,
  },
} as const;

/** What saving a draft and publishing answer: where the template stands now. */
export const templateStateReply = {
  type: 'object',
  required: ['slug', 'draftRevision', 'liveVersion'],
  properties: { slug: str, draftRevision: { type: 'integer' }, liveVersion },
} as const;

export const templateReply = {
  type: 'object',
  required: ['template', 'versions'],
  properties: {
    template: {
      type: 'object',
      required: ['slug', 'name', 'description', 'definitionYaml', 'draftRevision', 'liveVersion', 'hasUnpublishedChanges'],
      properties: {
        slug: str, name: str, description: str, definitionYaml: str, draftRevision: { type: 'integer' }, liveVersion,
        draftUpdatedAt: str, draftUpdatedBy: str, createdAt: str, hasUnpublishedChanges: { type: 'boolean' },
      },
    },
    versions: { type: 'array', items: versionSummary },
  },
} as const;

const nodeIds = { type: 'array', items: str } as const;

export const templateDiffReply = {
  type: 'object',
  required: ['slug', 'liveVersion', 'draftRevision', 'changed', 'nameChanged', 'descriptionChanged', 'yamlChanged', 'nodesAdded', 'nodesRemoved', 'nodesModified', 'edgesAdded', 'edgesRemoved'],
  properties: {
    slug: str, liveVersion, draftRevision: { type: 'integer' }, changed: { type: 'boolean' }, nameChanged: { type: 'boolean' },
    descriptionChanged: { type: 'boolean' }, yamlChanged: { type: 'boolean' }, nodesAdded: nodeIds, nodesRemoved: nodeIds,
    nodesModified: nodeIds, edgesAdded: { type: 'integer' }, edgesRemoved: { type: 'integer' },
  },
} as const;
