import type { OrgRole, ProjectRole } from '../../schemas/identity/principal.js';
import type { ApiKeyMeta, RegistrationTokenMeta } from '../../schemas/identity/org-actor.js';

/** Identity records as the rest of the code sees them: camelCase, timestamps as ISO strings, never a secret. */
export interface OrgRecord {
  readonly id: string;
  readonly name: string;
  readonly slug: string;
  readonly plan: string;
  readonly createdAt: string;
}

export interface UserRecord {
  readonly id: string;
  readonly email: string;
  readonly firstName: string | null;
  readonly lastName: string | null;
  readonly profilePictureUrl: string | null;
}

export interface ProjectRecord {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
  readonly slug: string;
  readonly createdAt: string;
}

export interface MembershipRecord {
  readonly org: OrgRecord;
  readonly role: OrgRole;
}

export interface ProjectAccess extends ProjectRecord {
  /** The caller's explicit project role, when one was granted. */
  readonly role: ProjectRole | null;
}

export interface TeamRecord {
  readonly id: string;
  readonly orgId: string;
  readonly name: string;
  readonly createdAt: string;
}

export const teamRoles = ['maintainer', 'member'] as const;
export type TeamRole = (typeof teamRoles)[number];

export interface TeamMemberRecord {
  readonly userId: string;
  readonly role: TeamRole;
  readonly addedAt: string;
  readonly user: UserRecord;
}

/** A credential as read back from its table: the org actor's record of it, with its org and times as ISO strings. */
type StoredCredential<M extends { createdAt: number; revokedAt: number | null }> =
  Omit<M, 'createdAt' | 'revokedAt'> & { readonly orgId: string; readonly createdAt: string; readonly revokedAt: string | null };

export type ApiKeyRecord = StoredCredential<ApiKeyMeta>;
export type RegistrationTokenRecord = StoredCredential<RegistrationTokenMeta>;

type Row = Record<string, unknown>;

export const iso = (value: unknown): string => (value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString());
export const isoOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : iso(value));
const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
/** jsonb comes back parsed from pg and PGlite alike; a string is tolerated in case a driver hands back text. */
const stringArray = (value: unknown): string[] => {
  const parsed = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  return Array.isArray(parsed) ? parsed.map(String) : [];
};

export const toOrg = (r: Row): OrgRecord => ({
  id: String(r.id), name: String(r.name), slug: String(r.slug), plan: String(r.plan), createdAt: iso(r.created_at),
});

export const toUser = (r: Row): UserRecord => ({
  id: String(r.id),
  email: String(r.email),
  firstName: text(r.first_name),
  lastName: text(r.last_name),
  profilePictureUrl: text(r.profile_picture_url),
});

export const toProject = (r: Row): ProjectRecord => ({
  id: String(r.id), orgId: String(r.org_id), name: String(r.name), slug: String(r.slug), createdAt: iso(r.created_at),
});

export const toTeam = (r: Row): TeamRecord => ({
  id: String(r.id), orgId: String(r.org_id), name: String(r.name), createdAt: iso(r.created_at),
});

export const toApiKey = (r: Row): ApiKeyRecord => ({
  id: String(r.id),
  orgId: String(r.org_id),
  name: String(r.name),
  prefix: String(r.prefix),
  hash: String(r.hash),
  scopes: stringArray(r.scopes),
  requesterId: text(r.requester_id),
  createdBy: text(r.created_by),
  createdAt: iso(r.created_at),
  revokedAt: isoOrNull(r.revoked_at),
});

export const toRegistrationToken = (r: Row): RegistrationTokenRecord => ({
  id: String(r.id),
  orgId: String(r.org_id),
  name: String(r.name),
  prefix: String(r.prefix),
  hash: String(r.hash),
  projects: stringArray(r.projects),
  createdAt: iso(r.created_at),
  revokedAt: isoOrNull(r.revoked_at),
});

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids from paths are checked before they reach a uuid column: a malformed one is simply "not found", never a 500. */
export const isUuid = (value: string): boolean => uuidPattern.test(value);
