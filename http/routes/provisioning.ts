import { randomBytes, randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route, HttpRequest, Reply } from '../types.js';
import { route, type BodyOf } from '../route.js';
import { hashPassword } from '../../actors/services/identity/passwords.js';
import { tags } from '../../actors/services/identity/revocation.js';
import { announceRevocation } from './announce-revocation.js';
import { deleteProvisionedOrg, findOrg, projectsInOrg, provisionMember, provisionOrg, slugTaken } from '../../storage/identity/orgs.js';
import * as schemas from '../../schemas/identity/http.js';
import { auditTrail } from './audit-trail.js';
import { issueApiKey, issueRegistrationToken } from './api-keys.js';
import { userToken } from './login.js';
import { publicUser } from './public-user.js';

/**
 * Provisioning by the platform admin: a new org with its owner, default project and first credentials, and users
 * added to an org. Credentials are issued through the org actor once the org exists.
 */

/** The key handed out with a new org acts for the org's owner at admin level. */
export const PROVISIONING_KEY_SCOPES = ['admin'] as const;

function slugify(name: string): string {
  const slug = name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40).replace(/-+$/, '');
  return slug === '' ? 'org' : slug;
}

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

export function provisioningRoutes(): Route<Deps>[] {
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
  ];
}
