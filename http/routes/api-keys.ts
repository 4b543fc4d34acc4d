import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route, HttpRequest, Reply, RouteAuthorization, RouteCall } from '../types.js';
import { route, type BodyOf } from '../route.js';
import type { OrgPrincipal } from '../../actors/services/identity/principal.js';
import { apiKeyPrefix, mintSecret, registrationTokenPrefix } from '../../actors/services/identity/secrets-format.js';
import { tags } from '../../actors/services/identity/revocation.js';
import { announceRevocation } from './announce-revocation.js';
import { orgAddress, type ApiKeyIssued, type CredentialRevoked, type OrgMsg, type RegistrationTokenIssued } from '../../actors/kinds/org/index.js';
import { projectsInOrg } from '../../storage/identity/orgs.js';
import { findApiKey } from '../../storage/identity/credentials.js';
import { isUuid } from '../../storage/identity/rows.js';
import * as schemas from '../../schemas/identity/http.js';
import { auditTrail } from './audit-trail.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';

/**
 * An org's API keys and daemon registration tokens: issued and revoked through the org actor (`org/<orgId>`), the
 * secret handed out once, a revocation announced to every node before the reply. A path orgId that is not the
 * caller's org is 403 TENANT_MISMATCH; another org's key or token is 404.
 */

/** Scopes a key gets when its creator names none: it can work (edit, dispatch) but not administer. */
export const DEFAULT_KEY_SCOPES = ['read', 'write'] as const;

/** The human on whose behalf a credential acts, recorded as a key's creator. */
async function humanBehind(deps: Deps, p: OrgPrincipal): Promise<string | null> {
  if (p.kind === 'user') return p.userId;
  if (p.kind === 'apiKey') return (await findApiKey(deps.db, p.orgId, p.keyId))?.createdBy ?? null;
  return null;
}

/** Mints a key's secret and has the org actor store its hash; the full key exists only in this reply. */
export async function issueApiKey(
  deps: Deps, orgId: string, spec: { name: string; scopes: readonly string[]; requesterId: string | null; createdBy: string | null },
): Promise<ApiKeyIssued & { fullKey: string }> {
  const secret = mintSecret(apiKeyPrefix);
  const msg: OrgMsg = {
    type: 'org.issueApiKey', keyId: randomUUID(), name: spec.name, prefix: secret.lookupPrefix, hash: secret.hash,
    scopes: [...spec.scopes], requesterId: spec.requesterId, createdBy: spec.createdBy,
  };
  const issued = await deps.ask<ApiKeyIssued>(orgAddress(orgId), msg);
  return { ...issued, fullKey: secret.full };
}

/** Mints a registration token's secret and has the org actor store its hash, optionally limited to `projects`. */
export async function issueRegistrationToken(deps: Deps, orgId: string, name: string, projects: readonly string[]) {
  const secret = mintSecret(registrationTokenPrefix);
  const msg: OrgMsg = {
    type: 'org.issueRegistrationToken', tokenId: randomUUID(), name, prefix: secret.lookupPrefix, hash: secret.hash, projects: [...projects],
  };
  const issued = await deps.ask<RegistrationTokenIssued>(orgAddress(orgId), msg);
  return { ...issued, registrationToken: secret.full };
}

const keyReply = (k: ApiKeyIssued & { fullKey: string }) => ({
  id: k.id, fullKey: k.fullKey, name: k.name, prefix: k.prefix, scopes: k.scopes, requesterId: k.requesterId,
  createdAt: new Date(k.createdAt).toISOString(),
});

type CreateKeyBody = BodyOf<typeof schemas.createKeyBody>;

/** `manage-keys` on the caller's org; `find` refuses another org's path (and what it names) before Cedar is asked. */
const manageKeys = <Found>(find?: RouteAuthorization<Deps, any, Found>['find']): RouteAuthorization<Deps, any, Found> => ({
  ...(find === undefined ? {} : { find }),
  action: 'manage-keys',
  resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }),
});

/** The path's org is the caller's (403 TENANT_MISMATCH otherwise), and its `:id` a uuid (404 otherwise, as for an unknown one). */
const ownOrgAnd = (notFound: string) => async (req: HttpRequest, _deps: Deps, p: OrgPrincipal): Promise<string> => {
  assertOwnOrg(req, p);
  const id = req.params.id ?? '';
  if (!isUuid(id)) throw new TroupeError('NOT_FOUND', notFound);
  return id;
};

async function createKeyIn(orgId: string, p: OrgPrincipal, body: CreateKeyBody, deps: Deps) {
  const key = await issueApiKey(deps, orgId, {
    name: body.name.trim(),
    scopes: body.scopes ?? DEFAULT_KEY_SCOPES,
    requesterId: body.requesterId ?? null,
    createdBy: await humanBehind(deps, p),
  });
  await auditKeyCreated(deps, p, key);
  return key;
}

export async function createKey(req: HttpRequest<CreateKeyBody>, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  return { status: 201, body: keyReply(await createKeyIn(p.orgId, p, req.body, deps)) };
}

async function auditKeyCreated(deps: Deps, p: OrgPrincipal, key: ApiKeyIssued): Promise<void> {
  await auditTrail(deps, p.orgId, 'key.created', requesterOf(p), key.id, { name: key.name, scopes: [...key.scopes], requesterId: key.requesterId });
}

export async function createKeyDeprecated(req: HttpRequest<CreateKeyBody>, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  return {
    status: 201,
    body: keyReply(await createKeyIn(p.orgId, p, req.body, deps)),
    headers: { deprecation: 'true', link: `</api/org/${p.orgId}/keys>; rel="successor-version"` },
  };
}

export async function revokeKey(req: HttpRequest, deps: Deps, { found: keyId }: RouteCall<string>): Promise<Reply> {
  const p = orgPrincipal(req);
  const revoked = await deps.ask<CredentialRevoked>(orgAddress(p.orgId), { type: 'org.revokeApiKey', keyId } satisfies OrgMsg);
  // Before answering: once the caller hears "revoked", this node must already refuse the key.
  await announceRevocation(deps, [tags.apiKey(keyId)]);
  if (!revoked.alreadyRevoked) await auditTrail(deps, p.orgId, 'key.revoked', requesterOf(p), keyId);
  return { body: { id: revoked.id, revoked: true, revokedAt: new Date(revoked.revokedAt).toISOString() } };
}

export async function createRegistrationToken(req: HttpRequest<BodyOf<typeof schemas.createRegistrationTokenBody>>, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  const projects = req.body?.projects ?? [];
  const known = await projectsInOrg(deps.db, p.orgId, projects);
  const unknown = projects.find((id) => !known.has(id));
  if (unknown) throw new TroupeError('NOT_FOUND', `project ${unknown} not found in this org`, { field: 'projects' });
  const issued = await issueRegistrationToken(deps, p.orgId, req.body?.name?.trim() ?? 'registration token', projects);
  await auditTrail(deps, p.orgId, 'registration_token.created', requesterOf(p), issued.id, { name: issued.name, projects: [...issued.projects] });
  return { status: 201, body: { id: issued.id, registrationToken: issued.registrationToken, projects: issued.projects } };
}

export async function revokeRegistrationToken(req: HttpRequest, deps: Deps, { found: tokenId }: RouteCall<string>): Promise<Reply> {
  const p = orgPrincipal(req);
  const revoked = await deps.ask<CredentialRevoked>(orgAddress(p.orgId), { type: 'org.revokeRegistrationToken', tokenId } satisfies OrgMsg);
  await announceRevocation(deps, [tags.registration(tokenId)]);
  if (!revoked.alreadyRevoked) await auditTrail(deps, p.orgId, 'registration_token.revoked', requesterOf(p), tokenId);
  return { body: { id: revoked.id, revoked: true, revokedAt: new Date(revoked.revokedAt).toISOString() } };
}

const orgIdParam = 'orgId must be the caller\'s org (403 TENANT_MISMATCH otherwise).';

export function apiKeyRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/org/:orgId/keys', auth: 'org', tags: ['api-keys'], successStatus: 201,
      summary: `Issue an org API key (admin/owner); fullKey is returned only here; scopes default to [read, write]. ${orgIdParam}`,
      bodySchema: schemas.createKeyBody, responseSchema: schemas.createKeyReply,
      authorize: manageKeys(async (req, _deps, p) => assertOwnOrg(req, p)), handler: createKey,
    }),
    route({
      method: 'post', path: '/api/org/api-keys', auth: 'org', tags: ['api-keys'], successStatus: 201, deprecated: true,
      summary: 'Deprecated alias of POST /api/org/{orgId}/keys for the caller\'s org (answers with Deprecation and Link headers)',
      bodySchema: schemas.createKeyBody, responseSchema: schemas.createKeyReply,
      authorize: manageKeys(), handler: createKeyDeprecated,
    }),
    route({
      method: 'delete', path: '/api/org/:orgId/keys/:id', auth: 'org', tags: ['api-keys'],
      summary: `Revoke an API key; it stops authenticating before this answers; 404 for an unknown key or another org's. ${orgIdParam}`,
      responseSchema: schemas.revokeReply,
      authorize: manageKeys(ownOrgAnd('api key not found')), handler: revokeKey,
    }),
    route({
      method: 'post', path: '/api/org/:orgId/registration-tokens', auth: 'org', tags: ['daemons'], successStatus: 201,
      summary: `Issue a daemon registration token (admin/owner), optionally limited to projects of the org. ${orgIdParam}`,
      bodySchema: schemas.createRegistrationTokenBody, responseSchema: schemas.createRegistrationTokenReply,
      authorize: manageKeys(async (req, _deps, p) => assertOwnOrg(req, p)), handler: createRegistrationToken,
    }),
    route({
      method: 'delete', path: '/api/org/:orgId/registration-tokens/:id', auth: 'org', tags: ['daemons'],
      summary: `Revoke a daemon registration token. ${orgIdParam}`,
      responseSchema: schemas.revokeReply,
      authorize: manageKeys(ownOrgAnd('registration token not found')), handler: revokeRegistrationToken,
    }),
  ];
}
