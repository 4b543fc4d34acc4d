import { scopeSchema } from './org-actor.js';
import { orgRoles, projectRoles } from './principal.js';

/**
 * Request and reply schemas of the identity routes (http/routes/identity.ts). Bodies are closed
 * (`additionalProperties: false`) so a misspelt field is a 400 naming it, not a silently ignored value.
 */
const uuid = { type: 'string', format: 'uuid' } as const;
const email = { type: 'string', format: 'email', maxLength: 254 } as const;
const personName = { type: 'string', minLength: 1, maxLength: 100 } as const;
const password = { type: 'string', minLength: 8, maxLength: 256 } as const;
const name = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' } as const;
const orgRole = { enum: orgRoles } as const;
const projectRole = { enum: projectRoles } as const;
const timestamp = { type: 'string', format: 'date-time' } as const;
const nullableString = { type: ['string', 'null'] } as const;

export const scopesSchema = { type: 'array', maxItems: 32, uniqueItems: true, items: scopeSchema } as const;

export const userSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'email', 'firstName', 'lastName', 'profilePictureUrl'],
  properties: { id: uuid, email: { type: 'string' }, firstName: nullableString, lastName: nullableString, profilePictureUrl: nullableString },
} as const;

export const orgSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'slug', 'plan'],
  properties: { id: uuid, name: { type: 'string' }, slug: { type: 'string' }, plan: { type: 'string' }, createdAt: timestamp },
} as const;

export const projectSchema = {
  type: 'object',
  required: ['id', 'name', 'slug'],
  properties: { id: uuid, name: { type: 'string' }, slug: { type: 'string' }, role: { type: ['string', 'null'] } },
} as const;

// --- Provisioning (platform admin) ------------------------------------------------------------------------------

export const createOrgBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'owner'],
  properties: {
    name,
    slug: { type: 'string', pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$' },
    plan: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,31}$' },
    owner: {
      type: 'object',
      additionalProperties: false,
      required: ['email'],
      properties: { email, firstName: personName, lastName: personName, password },
    },
  },
} as const;

export const createOrgReply = {
  type: 'object',
  required: ['org', 'owner', 'project', 'userToken', 'apiKey', 'registrationToken'],
  properties: {
    org: orgSchema,
    owner: userSchema,
    project: projectSchema,
    userToken: { type: 'string', description: 'JWT for the owner (12 h)' },
    apiKey: {
      type: 'object',
      required: ['id', 'fullKey'],
      properties: { id: uuid, fullKey: { type: 'string', description: 'shown only here' }, scopes: scopesSchema },
    },
    registrationToken: { type: 'string', description: 'daemon registration token, shown only here' },
    registrationTokenId: uuid,
  },
} as const;

export const createOrgUserBody = {
  type: 'object',
  additionalProperties: false,
  required: ['email', 'role'],
  properties: {
    email,
    role: orgRole,
    password,
    firstName: personName,
    lastName: personName,
    projects: {
      type: 'array',
      maxItems: 100,
      items: { type: 'object', additionalProperties: false, required: ['id', 'role'], properties: { id: uuid, role: projectRole } },
    },
  },
} as const;

export const createOrgUserReply = {
  type: 'object',
  required: ['user', 'userToken'],
  properties: { user: userSchema, userToken: { type: 'string' }, role: orgRole },
} as const;

// --- Login ------------------------------------------------------------------------------------------------------

export const loginBody = {
  type: 'object',
  additionalProperties: false,
  required: ['email', 'password'],
  properties: { email: { type: 'string', minLength: 1, maxLength: 254 }, password: { type: 'string', minLength: 1, maxLength: 256 }, orgId: uuid },
} as const;

export const loginReply = {
  type: 'object',
  required: ['userToken', 'orgId', 'expiresAt'],
  properties: { userToken: { type: 'string' }, orgId: uuid, expiresAt: timestamp },
} as const;

export const okReply = { type: 'object', required: ['ok'], properties: { ok: { const: true } } } as const;

// --- Caller context ---------------------------------------------------------------------------------------------

export const orgListReply = {
  type: 'object',
  required: ['orgs', 'activeOrgId'],
  properties: {
    orgs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'slug', 'role'],
        properties: { id: uuid, name: { type: 'string' }, slug: { type: 'string' }, role: orgRole },
      },
    },
    activeOrgId: uuid,
  },
} as const;

export const whoamiReply = {
  type: 'object',
  additionalProperties: false,
  required: ['user', 'apiKey', 'org', 'projects', 'scopes'],
  properties: {
    user: {
      description: 'The person the credential acts as: the user of a user token or browser session; null for every other '
        + 'credential (API keys, machine and agent tokens), which the operations for people (approval decide, web push) refuse.',
      oneOf: [userSchema, { type: 'null' }],
    },
    apiKey: {
      description: 'The API key the caller authenticated with, and the id of the user who created it (null when a machine '
        + 'credential did); null for any other credential.',
      oneOf: [
        {
          type: 'object', additionalProperties: false, required: ['id', 'name', 'createdBy'],
          properties: { id: uuid, name: { type: 'string' }, createdBy: { type: ['string', 'null'] } },
        },
        { type: 'null' },
      ],
    },
    org: {
      type: 'object', additionalProperties: false, required: ['id', 'name', 'slug', 'plan'],
      properties: { id: uuid, name: { type: 'string' }, slug: { type: 'string' }, plan: { type: 'string' } },
    },
    projects: { type: 'array', items: projectSchema },
    scopes: { type: 'array', items: { type: 'string' }, description: 'a key\'s scopes; for a user, those their org role implies' },
  },
} as const;

// --- API keys and registration tokens ----------------------------------------------------------------------------

export const createKeyBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name, scopes: scopesSchema, requesterId: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_.:-]+$' } },
} as const;

export const createKeyReply = {
  type: 'object',
  required: ['id', 'fullKey', 'name', 'prefix', 'scopes', 'createdAt'],
  properties: {
    id: uuid,
    fullKey: { type: 'string', description: 'trp_ + 40 base62 characters; returned only once' },
    name: { type: 'string' },
    prefix: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    requesterId: nullableString,
    createdAt: timestamp,
  },
} as const;

export const revokeReply = {
  type: 'object',
  required: ['id', 'revoked', 'revokedAt'],
  properties: { id: uuid, revoked: { const: true }, revokedAt: timestamp },
} as const;

export const createRegistrationTokenBody = {
  type: 'object',
  additionalProperties: false,
  properties: { name, projects: { type: 'array', maxItems: 100, uniqueItems: true, items: uuid } },
} as const;

export const createRegistrationTokenReply = {
  type: 'object',
  required: ['id', 'registrationToken'],
  properties: { id: uuid, registrationToken: { type: 'string', description: 'trg_ + 40 base62 characters; returned only once' }, projects: { type: 'array', items: uuid } },
} as const;

// --- Teams -------------------------------------------------------------------------------------------------------

const teamSchema = {
  type: 'object',
  required: ['id', 'orgId', 'name', 'createdAt'],
  properties: { id: uuid, orgId: uuid, name: { type: 'string' }, createdAt: timestamp },
} as const;

export const createTeamBody = { type: 'object', additionalProperties: false, required: ['name'], properties: { name } } as const;
export const createTeamReply = { type: 'object', required: ['team'], properties: { team: teamSchema } } as const;

const teamMemberSchema = {
  type: 'object',
  required: ['userId', 'role', 'addedAt', 'user'],
  properties: { userId: uuid, role: { enum: ['maintainer', 'member'] }, addedAt: timestamp, user: userSchema },
} as const;

export const addTeamMemberBody = {
  type: 'object',
  additionalProperties: false,
  required: ['userId'],
  properties: { userId: uuid, role: { enum: ['maintainer', 'member'] } },
} as const;
export const addTeamMemberReply = { type: 'object', required: ['member'], properties: { member: teamMemberSchema } } as const;
export const teamMembersReply = { type: 'object', required: ['members'], properties: { members: { type: 'array', items: teamMemberSchema } } } as const;
