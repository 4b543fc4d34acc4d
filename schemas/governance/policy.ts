/**
 * Wire shapes of policies (spec 2.4): the HTTP bodies and replies, and the policy actor's messages. Cedar text is
 * bounded here (64 KiB) and checked for syntax and against the Cedar schema by `actors/kinds/policy/cedar-text.ts`.
 */
export const policyStatuses = ['draft', 'active', 'archived'] as const;
export type PolicyStatus = (typeof policyStatuses)[number];
export const policyScopes = ['workspace', 'project'] as const;
export type PolicyScope = (typeof policyScopes)[number];

/** Cedar text large enough for any hand-written policy set, small enough to evaluate on every decision. */
export const MAX_CEDAR_POLICY_CHARS = 64 * 1024;

const uuid = { type: 'string', format: 'uuid' } as const;
const isoTime = { type: 'string', format: 'date-time' } as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
const description = { type: 'string', maxLength: 4000 } as const;
const cedarPolicy = { type: 'string', minLength: 1, maxLength: MAX_CEDAR_POLICY_CHARS } as const;
const changeReason = { type: 'string', maxLength: 1000 } as const;
const regulatoryTags = { type: 'array', maxItems: 32, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 64 } } as const;
/** Free-form, but bounded: it lives in every snapshot and every read. */
const metadata = { type: 'object', maxProperties: 64 } as const;
const scope = { enum: policyScopes } as const;
const scopeId = { type: 'string', minLength: 1, maxLength: 200 } as const;

export const createPolicyBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'cedarPolicy'],
  properties: {
    name, description, cedarPolicy, regulatoryTags, metadata, changeReason,
    /** Defaults to the caller's org; any other value is refused (the org is the workspace). */
    workspaceId: uuid,
    scope,
    /** The project id when scope is `project`; ignored (set to the org id) for `workspace`. */
    scopeId,
    status: { enum: ['draft', 'active'] },
  },
} as const;

export const updatePolicyBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name, description, cedarPolicy, regulatoryTags, metadata, changeReason, scope, scopeId,
    status: { enum: policyStatuses },
  },
} as const;

export const listPoliciesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    workspaceId: uuid,
    status: { enum: policyStatuses },
    scope,
    limit: { type: 'integer', minimum: 1, maximum: 500 },
    offset: { type: 'integer', minimum: 0, maximum: 1_000_000 },
  },
} as const;

export const policySchema = {
  type: 'object',
  required: ['id', 'workspaceId', 'name', 'description', 'cedarPolicy', 'scope', 'scopeId', 'status', 'createdBy',
    'createdAt', 'updatedAt', 'archivedAt', 'version', 'regulatoryTags', 'metadata'],
  properties: {
    id: uuid, workspaceId: uuid, name, description, cedarPolicy, scope, scopeId,
    status: { enum: policyStatuses }, createdBy: { type: 'string' }, createdAt: isoTime, updatedAt: isoTime,
    archivedAt: { type: ['string', 'null'] }, version: { type: 'integer', minimum: 1 }, regulatoryTags, metadata,
  },
} as const;

export const policyVersionSchema = {
  type: 'object',
  required: ['id', 'policyId', 'cedarPolicy', 'changedBy', 'changeReason', 'createdAt', 'version'],
  properties: {
    id: uuid, policyId: uuid, cedarPolicy, changedBy: { type: 'string' }, changeReason: { type: 'string' },
    createdAt: isoTime, version: { type: 'integer', minimum: 1 },
  },
} as const;

export const policyReply = { type: 'object', required: ['policy'], properties: { policy: policySchema } } as const;
export const policyWithVersionsReply = {
  type: 'object',
  required: ['policy', 'versions'],
  properties: { policy: policySchema, versions: { type: 'array', items: policyVersionSchema } },
} as const;
export const policyListReply = {
  type: 'object',
  required: ['policies'],
  properties: { policies: { type: 'array', items: policySchema } },
} as const;

const policyFields = {
  name, description, cedarPolicy, regulatoryTags, metadata, scope, scopeId,
} as const;

/** The policy actor's messages; the actor refuses anything else before `decide` sees it. */
export const policyMessageSchema = {
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'orgId', 'versionId', 'name', 'description', 'cedarPolicy', 'scope', 'scopeId', 'status',
        'regulatoryTags', 'metadata', 'createdBy', 'changeReason'],
      properties: {
        type: { const: 'policy.create' }, orgId: uuid, versionId: uuid, ...policyFields,
        status: { enum: ['draft', 'active'] }, createdBy: { type: 'string', minLength: 1, maxLength: 200 }, changeReason,
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'orgId', 'versionId', 'changes', 'changedBy', 'changeReason'],
      properties: {
        type: { const: 'policy.update' }, orgId: uuid, versionId: uuid,
        changes: {
          type: 'object',
          additionalProperties: false,
          properties: { ...policyFields, status: { enum: policyStatuses } },
        },
        changedBy: { type: 'string', minLength: 1, maxLength: 200 }, changeReason,
      },
    },
  ],
} as const;

// Records: a policy as the policy actor holds it and the read models store it (actors/kinds/policy, storage/governance).

export interface PolicyRecord {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
  readonly description: string;
  readonly cedarPolicy: string;
  readonly scope: PolicyScope;
  readonly scopeId: string;
  readonly status: PolicyStatus;
  readonly version: number;
  readonly regulatoryTags: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly archivedAt: number | null;
}

export interface PolicyVersionRecord {
  readonly id: string;
  readonly policyId: string;
  readonly version: number;
  readonly cedarPolicy: string;
  readonly changedBy: string;
  readonly changeReason: string;
  readonly createdAt: number;
}
