import { orgRoles } from '../../schemas/identity/principal.js';

/**
 * Request and reply schemas of the single sign-on routes (http/routes/sso.ts, sso-sign-in.ts). Bodies are closed, so
 * a misspelt member is a 400 naming it.
 */
const orgRole = { enum: orgRoles } as const;
// The characters of a host name; that it is a domain of two or more labels (no wildcard, port or IP literal) is checked
// by the route (http/routes/sso.ts), after the org is known to be the caller's.
const domain = { type: 'string', minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.-]+$' } as const;

export const ssoSettingsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['issuer', 'clientId', 'clientSecret', 'emailDomains'],
  properties: {
    issuer: { type: 'string', format: 'uri', maxLength: 2048, description: "The provider's issuer identifier: https, or http on a loopback address only" },
    clientId: { type: 'string', minLength: 1, maxLength: 512, pattern: '^\\S+$' },
    clientSecret: { type: 'string', minLength: 1, maxLength: 4096, description: 'Sealed with the master key; never returned' },
    emailDomains: { type: 'array', minItems: 1, maxItems: 50, items: domain, description: 'Email domains whose people sign in at this provider once verified by DNS; a domain verified by another org is a 409' },
    groupsClaim: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[\\x21-\\x7e]+$', default: 'groups', description: 'ID token claim holding the groups (default "groups")' },
    roleMap: {
      type: 'object', maxProperties: 200, propertyNames: { minLength: 1, maxLength: 256 }, additionalProperties: orgRole,
      description: 'Group → org role; the highest role any group maps to wins',
    },
    defaultRole: { anyOf: [orgRole, { type: 'null' }], description: 'Role of a person no group maps (default "member"); null refuses them' },
    enforce: { type: 'boolean', description: "Refuse password sign-in to this org for its verified domains' people (default false)" },
  },
} as const;

/** A claimed domain, its proof and whether it routes sign-ins (decision 0091). */
export const ssoDomainReply = {
  type: 'object',
  additionalProperties: false,
  required: ['domain', 'status', 'txtName', 'txtValue', 'verifiedAt'],
  properties: {
    domain: { type: 'string' },
    status: {
      type: 'string', enum: ['pending', 'verified', 'taken'],
      description: 'pending: not proven, routes no sign-in; verified: proven by DNS, its sign-ins go to this org\'s provider; taken: another org verified it first',
    },
    txtName: { type: 'string', description: 'Where to publish the TXT record: _troupe-verification.<domain>' },
    txtValue: { type: 'string', description: 'The TXT record that proves the claim: troupe-verification=<token of this org and domain>' },
    verifiedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export const ssoSettingsReply = {
  type: 'object',
  additionalProperties: false,
  required: ['orgId', 'issuer', 'clientId', 'clientSecretSet', 'emailDomains', 'domains', 'groupsClaim', 'roleMap', 'defaultRole', 'enforce', 'redirectUri', 'updatedAt', 'updatedBy'],
  properties: {
    orgId: { type: 'string', format: 'uuid' },
    issuer: { type: 'string' },
    clientId: { type: 'string' },
    clientSecretSet: { const: true },
    emailDomains: { type: 'array', items: { type: 'string' }, description: 'Every claimed domain, verified or not' },
    domains: { type: 'array', items: ssoDomainReply, description: 'Each claimed domain with its status and the DNS TXT record that verifies it' },
    groupsClaim: { type: 'string' },
    roleMap: { type: 'object', additionalProperties: orgRole },
    defaultRole: { anyOf: [orgRole, { type: 'null' }] },
    enforce: { type: 'boolean' },
    redirectUri: { type: 'string', description: 'The redirect URI to register at the provider' },
    updatedAt: { type: 'string', format: 'date-time' },
    updatedBy: { type: 'string' },
  },
} as const;

export const ssoDeletedReply = {
  type: 'object', additionalProperties: false, required: ['deleted'], properties: { deleted: { const: true } },
} as const;

export const ssoStartBody = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: { type: 'string', format: 'email', maxLength: 254 },
    next: { type: 'string', maxLength: 2048, description: 'Console path to land on after signing in (a path on this node; anything else is "/")' },
  },
} as const;

export const ssoStartReply = {
  type: 'object',
  additionalProperties: false,
  required: ['sso'],
  properties: {
    sso: { type: 'boolean', description: "Whether the email's domain signs in at an org's provider" },
    authorizationUrl: { type: 'string', description: 'Where to send the browser (present when sso is true)' },
    expiresAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const ssoCallbackQuery = {
  type: 'object',
  required: ['state'],
  // Providers add parameters of their own (RFC 9207 `iss`, `session_state`, `error_description`…); openid-client reads them.
  properties: {
    state: { type: 'string', minLength: 1, maxLength: 128 },
    code: { type: 'string', minLength: 1, maxLength: 4096 },
    error: { type: 'string', maxLength: 128 },
  },
} as const;
