import { orgRoles } from './principal.js';
import { userSchema } from './http.js';

/**
 * Request and reply schemas of the org administration routes (http/routes/members.ts, http/routes/credential-lists.ts,
 * the team listing): what an org's admins use to run it from the console (issue 37 §2). Bodies are closed.
 */
const uuid = { type: 'string', format: 'uuid' } as const;
const timestamp = { type: 'string', format: 'date-time' } as const;
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
const orgRole = { enum: orgRoles } as const;
const personName = { type: 'string', minLength: 1, maxLength: 100 } as const;

const memberSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['user', 'role', 'joinedAt', 'hasPassword'],
  properties: {
    user: userSchema,
    role: orgRole,
    joinedAt: timestamp,
    hasPassword: { type: 'boolean', description: 'Whether they can sign in with a password (false: single sign-on only, or not yet)' },
  },
} as const;

export const membersReply = {
  type: 'object', additionalProperties: false, required: ['members'],
  properties: { members: { type: 'array', items: memberSchema, description: 'Oldest membership first, at most 1000' } },
} as const;

export const memberReply = {
  type: 'object', additionalProperties: false, required: ['member', 'created'],
  properties: {
    member: memberSchema,
    created: { type: 'boolean', description: 'True when this request created the user; false when an existing user was added to the org' },
  },
} as const;

export const addMemberBody = {
  type: 'object',
  additionalProperties: false,
  required: ['email', 'role'],
  properties: {
    email: { type: 'string', format: 'email', maxLength: 254 },
    role: orgRole,
    firstName: personName,
    lastName: personName,
    password: {
      type: 'string', minLength: 8, maxLength: 256,
      description: 'Sets the password of a user this request creates; an existing user keeps how they sign in',
    },
  },
} as const;

export const changeMemberBody = {
  type: 'object', additionalProperties: false, required: ['role'], properties: { role: orgRole },
} as const;

export const memberRemovedReply = {
  type: 'object', additionalProperties: false, required: ['userId', 'removed'],
  properties: { userId: uuid, removed: { const: true } },
} as const;

const teamListingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'orgId', 'name', 'createdAt', 'memberCount'],
  properties: { id: uuid, orgId: uuid, name: { type: 'string' }, createdAt: timestamp, memberCount: { type: 'integer', minimum: 0 } },
} as const;

export const teamsReply = {
  type: 'object', additionalProperties: false, required: ['teams'], properties: { teams: { type: 'array', items: teamListingSchema } },
} as const;

export const teamMemberRemovedReply = {
  type: 'object', additionalProperties: false, required: ['teamId', 'userId', 'removed'],
  properties: { teamId: uuid, userId: uuid, removed: { const: true } },
} as const;

const apiKeyListingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'prefix', 'scopes', 'requesterId', 'createdBy', 'createdAt', 'revokedAt'],
  properties: {
    id: uuid, name: { type: 'string' }, prefix: { type: 'string', description: 'The lookup prefix that names the key; never its secret' },
    scopes: { type: 'array', items: { type: 'string' } }, requesterId: { type: ['string', 'null'] },
    createdBy: { type: ['string', 'null'], description: 'The user the key acts for' }, createdAt: timestamp, revokedAt: nullableTimestamp,
  },
} as const;

export const apiKeysReply = {
  type: 'object', additionalProperties: false, required: ['keys'],
  properties: { keys: { type: 'array', items: apiKeyListingSchema, description: 'Newest first, revoked ones included, at most 500' } },
} as const;

const registrationTokenListingSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'prefix', 'projects', 'createdAt', 'revokedAt'],
  properties: {
    id: uuid, name: { type: 'string' }, prefix: { type: 'string' },
    projects: { type: 'array', items: uuid, description: 'The projects its workers may serve; empty for all of the org' },
    createdAt: timestamp, revokedAt: nullableTimestamp,
  },
} as const;

export const registrationTokensReply = {
  type: 'object', additionalProperties: false, required: ['registrationTokens'],
  properties: { registrationTokens: { type: 'array', items: registrationTokenListingSchema, description: 'Newest first, revoked ones included, at most 500' } },
} as const;
