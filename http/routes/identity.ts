import { randomBytes, randomUUID } from 'node:crypto';
import { loginLimits } from '../../actors/identity/login-limits.js';
import type { Deps } from '../../actors/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route, HttpRequest, Reply, RouteAuthorization, RouteCall } from '../types.js';
import { route, type BodyOf } from '../route.js';
import type { OrgPrincipal, OrgRole } from '../../actors/identity/principal.js';
import { hashPassword, verifyPassword, decoyPasswordHash } from '../../actors/identity/passwords.js';
import { apiKeyPrefix, mintSecret, registrationTokenPrefix } from '../../actors/identity/secrets-format.js';
import { looksLikeJwt, signToken, userTokenId, verifyTokenSync } from '../../actors/identity/tokens.js';
import { readCookie, SESSION_COOKIE } from '../../actors/identity/authenticator.js';
import { tags } from '../../actors/identity/revocation.js';
import { announceRevocation } from './announce-revocation.js';
import { orgAddress, type ApiKeyIssued, type CredentialRevoked, type OrgMsg, type RegistrationTokenIssued } from '../../actors/org/index.js';
import {
  deleteProvisionedOrg, findOrg, listMemberships, listProjectAccess, projectsInOrg, provisionMember, provisionOrg, slugTaken,
} from '../../storage/identity/orgs.js';
import { findLoginByEmail, findOrgMember } from '../../storage/identity/users.js';
import { findApiKey } from '../../storage/identity/credentials.js';
import { revokeUserToken } from '../../storage/identity/revoked-user-tokens.js';
import { findTeam, insertTeam, listTeamMembers, upsertTeamMember } from '../../storage/identity/teams.js';
import { isUuid, type UserRecord } from '../../storage/identity/rows.js';
import * as schemas from '../../schemas/identity/http.js';
import { auditTrail } from './audit-trail.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';

/**
 * Identity routes: provisioning (platform admin), login/logout, caller context, API keys, registration tokens
 * and teams. Writes of credentials go through the org actor (`org/<orgId>`); everything else is a direct,
 * org-scoped read or write of the identity tables. A path orgId that is not the caller's org is 403
 * TENANT_MISMATCH; another org's team or key is 404.
 */

/** Scopes a key gets when its creator names none: it can work (edit, dispatch) but not administer. */
export const DEFAULT_KEY_SCOPES = ['read', 'write'] as const;
/** The key handed out with a new org acts for the org's owner at admin level. */
export const PROVISIONING_KEY_SCOPES = ['admin'] as const;

const userToken = (deps: Deps, userId: string, orgId: string) => signToken(deps.services.keys, deps.clock, 'user', { sub: userId, org: orgId });

/** The scopes an org role implies, reported by whoami for users (keys report their own). */
export function scopesOfRole(role: OrgRole): string[] {
  switch (role) {
    case 'owner':
    case 'admin': return ['admin', 'write', 'read'];
    case 'member': return ['write', 'read'];
    case 'viewer': return ['read'];
  }
}

/** The org role a scoped credential acts at, for the org list entry (which must carry a role). */
function roleOfScopes(scopes: readonly string[]): OrgRole {
  return scopes.includes('admin') ? 'admin' : scopes.includes('write') ? 'member' : 'viewer';
}

/** The human on whose behalf a credential acts, recorded as a key's creator. */
async function humanBehind(deps: Deps, p: OrgPrincipal): Promise<string | null> {
  if (p.kind === 'user') return p.userId;
  if (p.kind === 'apiKey') return (await findApiKey(deps.db, p.orgId, p.keyId))?.createdBy ?? null;
  return null;
}

const publicUser = (u: UserRecord) => ({ id: u.id, email: u.email, firstName: u.firstName, lastName: u.lastName, profilePictureUrl: u.profilePictureUrl });

function slugify(name: string): string {
  const slug = name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40).replace(/-+$/, '');
  return slug === '' ? 'org' : slug;
}

async function issueApiKey(
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

async function issueRegistrationToken(deps: Deps, orgId: string, name: string, projects: readonly string[]) {
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

// --- Handlers ---------------------------------------------------------------------------------------------------

export async function createOrg(req: HttpRequest<BodyOf<typeof schemas.createOrgBody>>, deps: Deps): Promise<Reply> {
  const { name, owner } = req.body;
  const passwordHash = owner.password === undefined ? undefined : await hashPassword(owner.password);
  let slug = req.body.slug ?? slugify(name);
  if (req.body.slug === undefined && (await slugTaken(deps.db, slug))) slug = `${slug.slice(0, 40)}-${randomBytes(3).toString('hex')}`;
  const { org, user, userCreated, project } = await provisionOrg(
    deps.db,
    { id: randomUUID(), name: name.trim(), slug, plan: req.body.plan ?? 'free' },
    { id: randomUUID(), email: owner.email, firstName: owner.firstName, lastName: owner.lastName, passwordHash },
    { id: randomUUID(), name: 'default', slug: 'default' },
  );
  // Credentials are issued by the org actor, after the org exists (its read models reference the org row). If that
  // fails (the broker or the database is out), nothing has been handed out yet: the org is taken back, so the admin
  // can send the same request again instead of finding its slug taken by an org without credentials.
  const issueAll = async () => ({
    apiKey: await issueApiKey(deps, org.id, { name: 'provisioning', scopes: PROVISIONING_KEY_SCOPES, requesterId: null, createdBy: user.id }),
    registration: await issueRegistrationToken(deps, org.id, 'default', []),
    token: await userToken(deps, user.id, org.id),
  });
  const { apiKey, registration, token } = await issueAll().catch(async (err: unknown) => {
    await deleteProvisionedOrg(deps.db, org.id, userCreated ? user.id : undefined).catch((undoErr: unknown) =>
      deps.log.error({ err: undoErr, orgId: org.id }, 'could not take back a half-provisioned org; delete it by hand'),
    );
    throw err;
  });
  await auditTrail(deps, org.id, 'org.provisioned', 'admin', org.id, { slug: org.slug, ownerId: user.id, ownerCreated: userCreated, projectId: project.id });
  await auditTrail(deps, org.id, 'key.created', 'admin', apiKey.id, { name: 'provisioning', scopes: [...apiKey.scopes] });
  await auditTrail(deps, org.id, 'registration_token.created', 'admin', registration.id, { name: 'default', projects: [] });
  return {
    status: 201,
    body: {
      org,
      owner: publicUser(user),
      project: { id: project.id, name: project.name, slug: project.slug },
      userToken: token.token,
      apiKey: { id: apiKey.id, fullKey: apiKey.fullKey, scopes: apiKey.scopes },
      registrationToken: registration.registrationToken,
      registrationTokenId: registration.id,
    },
  };
}

export async function createOrgUser(req: HttpRequest<BodyOf<typeof schemas.createOrgUserBody>>, deps: Deps): Promise<Reply> {
  const orgId = req.params.orgId ?? '';
  const org = await findOrg(deps.db, orgId);
  if (!org) throw new TroupeError('NOT_FOUND', 'org not found');
  const projects = req.body.projects ?? [];
  const known = await projectsInOrg(deps.db, org.id, projects.map((p) => p.id));
  const unknown = projects.find((p) => !known.has(p.id));
  if (unknown) throw new TroupeError('NOT_FOUND', `project ${unknown.id} not found in this org`, { field: 'projects' });
  const passwordHash = req.body.password === undefined ? undefined : await hashPassword(req.body.password);
  const user = await provisionMember(deps.db, org.id, {
    id: randomUUID(), email: req.body.email, firstName: req.body.firstName, lastName: req.body.lastName, passwordHash,
  }, req.body.role, projects);
  // An existing member's role may just have changed: every node must re-read it.
  await announceRevocation(deps, [tags.member(org.id, user.id)]);
  await auditTrail(deps, org.id, 'member.provisioned', 'admin', user.id, { role: req.body.role, projects, password: passwordHash !== undefined });
  const token = await userToken(deps, user.id, org.id);
  return { status: 201, body: { user: publicUser(user), userToken: token.token, role: req.body.role } };
}

function sessionCookie(deps: Deps, value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Lax; Path=/; Max-Age=${maxAgeSeconds}${deps.config.behindTls ? '; Secure' : ''}`;
}

export async function login(req: HttpRequest<BodyOf<typeof schemas.loginBody>>, deps: Deps): Promise<Reply> {
  const email = req.body.email.trim().toLowerCase();
  const limits = loginLimits(deps.services.rateLimits, email, req.clientAddress());
  await limits.assertOpen();
  const found = await findLoginByEmail(deps.db, email);
  // Unknown email, no password set, and wrong password all run one scrypt verification and end in the same 401.
  const stored = found?.passwordHash ?? (await decoyPasswordHash());
  const passwordOk = await verifyPassword(req.body.password, stored);
  if (!found) {
    await limits.failed();
    throw new TroupeError('AUTH_INVALID', 'email or password is wrong');
  }
  const memberships = await listMemberships(deps.db, found.user.id);
  const chosen = req.body.orgId === undefined ? memberships[0] : memberships.find((m) => m.org.id === req.body.orgId);
  if (found.passwordHash === null || !passwordOk || !chosen) {
    await limits.failed();
    // A failed sign-in to a known user is on the record of the org it named (or each of the user's orgs).
    const orgs = chosen ? [chosen.org.id] : memberships.map((m) => m.org.id);
    const reason = found.passwordHash === null ? 'no password set' : !passwordOk ? 'wrong password' : 'not a member of the org named';
    for (const orgId of orgs) await auditTrail(deps, orgId, 'auth.login_failed', `user:${found.user.id}`, found.user.id, { reason });
    throw new TroupeError('AUTH_INVALID', 'email or password is wrong');
  }
  await limits.succeeded();
  const token = await userToken(deps, found.user.id, chosen.org.id);
  await auditTrail(deps, chosen.org.id, 'auth.login', `user:${found.user.id}`, found.user.id);
  const maxAge = Math.max(0, Math.floor((token.expiresAt - deps.clock.now()) / 1000));
  return {
    body: { userToken: token.token, orgId: chosen.org.id, expiresAt: new Date(token.expiresAt).toISOString() },
    headers: { 'set-cookie': sessionCookie(deps, token.token, maxAge), 'cache-control': 'no-store' },
  };
}


/**
 * Ends the session of each user token the request presents (bearer and cookie), on every node, and clears the
 * cookie. Nothing presented, or nothing the authenticator accepts, ends nothing and still answers 200: logout
 * cannot fail a browser that is already logged out, and it can only end a token its caller holds.
 */
export async function logout(req: HttpRequest, deps: Deps): Promise<Reply> {
  for (const token of presentedUserTokens(req)) await endUserSession(deps, token);
  return { body: { ok: true }, headers: { 'set-cookie': sessionCookie(deps, '', 0), 'cache-control': 'no-store' } };
}

function presentedUserTokens(req: HttpRequest): string[] {
  const bearer = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '')?.[1];
  const cookie = req.headers.cookie === undefined ? undefined : readCookie(req.headers.cookie, SESSION_COOKIE);
  const tokens = [bearer, cookie].filter((t): t is string => t !== undefined && looksLikeJwt(t));
  return [...new Set(tokens)];
}

async function endUserSession(deps: Deps, token: string): Promise<void> {
  // Checked as the authenticator checks any route, so an expired, forged, already ended or non-user token (or one of
  // a user no longer in the org) is left alone; a storage outage is not swallowed (the session would live on).
  const accepted = await acceptedUserToken(deps, token);
  if (accepted === undefined) return;
  const { principal, verified } = accepted;
  const id = userTokenId(token, verified);
  await revokeUserToken(deps.db, { id, orgId: principal.orgId, userId: principal.userId, expiresAt: verified.expiresAt }, deps.clock.now());
  // Before answering, as for API keys: the caller's next request to this node is already refused.
  await announceRevocation(deps, [tags.userToken(id)]);
  await auditTrail(deps, principal.orgId, 'auth.logout', requesterOf(principal), principal.userId, { tokenId: id });
}

async function acceptedUserToken(deps: Deps, token: string) {
  try {
    const verified = verifyTokenSync(deps.services.keys, deps.clock, token, ['user']);
    const principal = await deps.auth.resolve({ authorization: `Bearer ${token}` });
    return principal?.kind === 'user' ? { principal, verified } : undefined;
  } catch (err) {
    if (err instanceof TroupeError && err.code === 'AUTH_INVALID') return undefined;
    throw err;
  }
}

export async function listOrgs(req: HttpRequest, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  if (p.kind === 'user') {
    const memberships = await listMemberships(deps.db, p.userId);
    return {
      body: {
        orgs: memberships.map((m) => ({ id: m.org.id, name: m.org.name, slug: m.org.slug, role: m.role })),
        activeOrgId: p.orgId,
      },
    };
  }
  const org = await findOrg(deps.db, p.orgId);
  if (!org) throw new TroupeError('NOT_FOUND', 'org not found');
  const role = p.kind === 'runtime' ? 'viewer' : roleOfScopes(p.scopes);
  return { body: { orgs: [{ id: org.id, name: org.name, slug: org.slug, role }], activeOrgId: org.id } };
}

export async function whoami(req: HttpRequest, deps: Deps): Promise<Reply> {
  const p = orgPrincipal(req);
  return { body: await deps.auth.contextOf(p, () => loadCallerContext(deps, p)) };
}

/**
 * `user` is the person the credential acts as, which only a user token or session is (decision 0069): the routes that
 * need a person (approval decide, web push) refuse every other credential, and whoami says the same. An API key is
 * named apart, with the user who created it, who is not the caller.
 */
async function loadCallerContext(deps: Deps, p: OrgPrincipal) {
  const org = await findOrg(deps.db, p.orgId);
  if (!org) throw new TroupeError('NOT_FOUND', 'org not found');
  const user = p.kind === 'user' ? await findOrgMember(deps.db, org.id, p.userId) : undefined;
  const key = p.kind === 'apiKey' ? await findApiKey(deps.db, org.id, p.keyId) : undefined;
  const projects = await listProjectAccess(deps.db, org.id, p.kind === 'user' ? p.userId : null);
  const scopes = p.kind === 'user' ? scopesOfRole(p.orgRole) : [...p.scopes];
  return {
    user: user ? publicUser(user) : null,
    apiKey: key ? { id: key.id, name: key.name, createdBy: key.createdBy } : null,
    org: { id: org.id, name: org.name, slug: org.slug, plan: org.plan },
    projects: projects.map((pr) => ({ id: pr.id, name: pr.name, slug: pr.slug, role: pr.role })),
    scopes,
  };
}

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

/** The new team's id is chosen before Cedar is asked, so the decision names the team that is then created. */
const newTeam: RouteAuthorization<Deps, any, string> = {
  find: async () => randomUUID(),
  action: 'manage-members',
  resource: (_req, p, id) => ({ type: 'Team', id, orgId: p.orgId }),
};

export async function createTeam(req: HttpRequest<BodyOf<typeof schemas.createTeamBody>>, deps: Deps, { found: id }: RouteCall<string>): Promise<Reply> {
  const p = orgPrincipal(req);
  const team = await insertTeam(deps.db, { id, orgId: p.orgId, name: req.body.name.trim() });
  await auditTrail(deps, p.orgId, 'team.created', requesterOf(p), id, { name: team.name });
  return { status: 201, body: { team } };
}

type Team = NonNullable<Awaited<ReturnType<typeof findTeam>>>;

/** `action` on the team `:id` names, found in the caller's org first (404 otherwise). */
const onTeam = (action: 'manage-members' | 'read'): RouteAuthorization<Deps, any, Team> => ({
  async find(req, deps, p) {
    const team = await findTeam(deps.db, p.orgId, req.params.id ?? '');
    if (!team) throw new TroupeError('NOT_FOUND', 'team not found');
    return team;
  },
  action,
  resource: (_req, _p, team) => ({ type: 'Team', id: team.id, orgId: team.orgId }),
});

export async function addTeamMember(req: HttpRequest<BodyOf<typeof schemas.addTeamMemberBody>>, deps: Deps, { found: team }: RouteCall<Team>): Promise<Reply> {
  const p = orgPrincipal(req);
  const user = await findOrgMember(deps.db, team.orgId, req.body.userId);
  if (!user) throw new TroupeError('NOT_FOUND', 'user not found in this org', { field: 'userId' });
  await upsertTeamMember(deps.db, team.orgId, team.id, user.id, req.body.role ?? 'member');
  await auditTrail(deps, team.orgId, 'team.member_set', requesterOf(p), team.id, { userId: user.id, role: req.body.role ?? 'member' });
  const member = (await listTeamMembers(deps.db, team.orgId, team.id)).find((m) => m.userId === user.id);
  return { status: 201, body: { member } };
}

export async function listMembersOfTeam(_req: HttpRequest, deps: Deps, { found: team }: RouteCall<Team>): Promise<Reply> {
  return { body: { members: await listTeamMembers(deps.db, team.orgId, team.id) } };
}

// --- Route table ------------------------------------------------------------------------------------------------

const orgIdParam = 'orgId must be the caller\'s org (403 TENANT_MISMATCH otherwise).';

export function identityRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'post', path: '/api/admin/orgs', auth: 'admin', tags: ['provisioning'], successStatus: 201,
      summary: 'Create an org with its owner, a "default" project, an admin-scoped API key and a daemon registration token (an existing user with the owner email is reused)',
      bodySchema: schemas.createOrgBody, responseSchema: schemas.createOrgReply, handler: createOrg,
    }),
    route({
      method: 'post', path: '/api/admin/orgs/:orgId/users', auth: 'admin', tags: ['provisioning'], successStatus: 201,
      summary: 'Add a user to an org (or change an existing member\'s role) with optional project roles; 404 for an unknown org or project',
      bodySchema: schemas.createOrgUserBody, responseSchema: schemas.createOrgUserReply, handler: createOrgUser,
    }),
    route({
      method: 'post', path: '/api/auth/login', auth: 'none', tags: ['auth'],
      summary: 'Exchange email and password for a user token and the troupe_session cookie; wrong password and unknown email are the same 401',
      bodySchema: schemas.loginBody, responseSchema: schemas.loginReply, handler: login,
    }),
    route({
      method: 'post', path: '/api/auth/logout', auth: 'none', tags: ['auth'], bodyKind: 'none',
      summary: 'End the presented user session (bearer user token and/or troupe_session cookie) on every node and clear the cookie; always 200, ending nothing when no valid user token is presented',
      responseSchema: schemas.okReply, handler: logout,
    }),
    route({
      method: 'get', path: '/api/org/list', auth: 'org', tags: ['identity'],
      summary: 'Orgs of the calling user with their role; for an API key or machine token, its own org with the role its scopes act at',
      responseSchema: schemas.orgListReply, handler: listOrgs,
    }),
    route({
      method: 'get', path: '/api/cli/whoami', auth: 'org', tags: ['identity'],
      summary: 'Caller context. user is the caller for a user token or session, the key\'s creator for an API key, null for a machine token',
      responseSchema: schemas.whoamiReply, handler: whoami,
    }),
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
    route({
      method: 'post', path: '/api/org/teams', auth: 'org', tags: ['teams'], successStatus: 201,
      summary: 'Create a team in the caller\'s org (admin/owner)',
      bodySchema: schemas.createTeamBody, responseSchema: schemas.createTeamReply, authorize: newTeam, handler: createTeam,
    }),
    route({
      method: 'post', path: '/api/org/teams/:id/members', auth: 'org', tags: ['teams'], successStatus: 201,
      summary: 'Add an org member to a team or change their team role (admin/owner); 404 for another org\'s team or a user outside the org',
      bodySchema: schemas.addTeamMemberBody, responseSchema: schemas.addTeamMemberReply, authorize: onTeam('manage-members'), handler: addTeamMember,
    }),
    route({
      method: 'get', path: '/api/org/teams/:id/members', auth: 'org', tags: ['teams'],
      summary: 'Members of a team with their user; 404 for another org\'s team',
      responseSchema: schemas.teamMembersReply, authorize: onTeam('read'), handler: listMembersOfTeam,
    }),
  ];
}

