import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { OrgPrincipal, OrgRole } from '../../actors/services/identity/principal.js';
import { hashPassword } from '../../actors/services/identity/passwords.js';
import { tags } from '../../actors/services/identity/revocation.js';
import type { HttpRequest, Route, RouteAuthorization } from '../types.js';
import { route, type BodyOf } from '../route.js';
import { ensureUser, normaliseEmail } from '../../storage/identity/orgs.js';
import { addMembership, changeMemberRole, findMember, listMembers, removeMember, setInitialPassword, userIdByEmail, type MemberRecord, type MembershipChange } from '../../storage/identity/org-admin.js';
import * as schemas from '../../schemas/identity/admin-http.js';
import { assertOwnOrg, orgPrincipal, requesterOf } from '../principal.js';
import { announceRevocation } from './announce-revocation.js';
import { auditTrail } from './audit-trail.js';

/**
 * An org's members, run by its own admins (issue 37 §2) rather than only by the platform admin's provisioning:
 * listed by anyone in the org, added, given another role and removed with `manage-members`. The role being granted
 * or taken is Cedar's `targetRole`, so only an owner makes, unmakes or removes an owner (`members.owner-only`), and
 * the org never loses its last owner (409). A changed or removed membership is announced as revoked, so every node
 * re-reads the member's role before their next request.
 */

const orgResource = (p: OrgPrincipal, targetRole: OrgRole) => ({ type: 'Org' as const, id: p.orgId, orgId: p.orgId, attrs: { targetRole } });

/** The path's member in the caller's org (404 for anyone else: another org's member is not seen). */
async function pathMember(req: HttpRequest, deps: Deps, p: OrgPrincipal): Promise<MemberRecord> {
  assertOwnOrg(req, p);
  const member = await findMember(deps.db, p.orgId, req.params.userId ?? '');
  if (!member) throw new TroupeError('NOT_FOUND', 'member not found');
  return member;
}

const memberView = (m: MemberRecord) => ({ user: m.user, role: m.role, joinedAt: m.joinedAt, hasPassword: m.hasPassword });

type AddBody = BodyOf<typeof schemas.addMemberBody>;
type ChangeBody = BodyOf<typeof schemas.changeMemberBody>;

const addMember: RouteAuthorization<Deps, AddBody, undefined> = {
  find: async (req, _deps, p) => { assertOwnOrg(req, p); },
  action: 'manage-members',
  resource: (req, p) => orgResource(p, req.body.role),
};

/** Making or unmaking an owner is an owner's act, whichever way the role moves. */
const changeMember: RouteAuthorization<Deps, ChangeBody, MemberRecord> = {
  find: pathMember,
  action: 'manage-members',
  resource: (req, p, m) => orgResource(p, m.role === 'owner' ? 'owner' : req.body.role),
};

const dropMember: RouteAuthorization<Deps, unknown, MemberRecord> = {
  find: pathMember,
  action: 'manage-members',
  resource: (_req, p, m) => orgResource(p, m.role),
};

const alreadyMember = () => new TroupeError('CONFLICT', 'already a member of this org: change their role instead', { field: 'email' });
/** 409 unless the change was made: the org keeps an owner, and a role someone else changed meanwhile is not overwritten. */
function refuseUnless(outcome: MembershipChange): void {
  if (outcome === 'last-owner') throw new TroupeError('CONFLICT', 'the org must keep at least one owner: make someone else owner first');
  if (outcome === 'moved') throw new TroupeError('CONFLICT', "their role changed while this was asked: reload and decide again");
}

export function memberRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/org/:orgId/members', auth: 'org', tags: ['identity'],
      summary: "The org's members with their role, oldest first (anyone in the org). orgId must be the caller's org (403 TENANT_MISMATCH otherwise)",
      responseSchema: schemas.membersReply,
      authorize: {
        find: async (req, _deps, p) => { assertOwnOrg(req, p); },
        action: 'read',
        resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }),
      },
      async handler(req, deps) {
        return { body: { members: (await listMembers(deps.db, orgPrincipal(req).orgId)).map(memberView) } };
      },
    }),
    route({
      method: 'post', path: '/api/org/:orgId/members', auth: 'org', tags: ['identity'], successStatus: 201,
      summary: 'Add a person to the org with a role (admin/owner; only an owner adds an owner): an existing user joins as they are, '
        + 'a new one is created, with the password given if any. 409 when they are already a member (change their role instead)',
      bodySchema: schemas.addMemberBody, responseSchema: schemas.memberReply,
      authorize: addMember,
      async handler(req, deps) {
        const p = orgPrincipal(req);
        const email = normaliseEmail(req.body.email);
        const existingId = await userIdByEmail(deps.db, email);
        if (existingId !== undefined && (await findMember(deps.db, p.orgId, existingId))) throw alreadyMember();
        const { user, created } = await ensureUser(deps.db, { id: randomUUID(), email, firstName: req.body.firstName, lastName: req.body.lastName });
        // A password only on a user this request created (`created` also covers one made by someone else meanwhile):
        // an org's admin never changes how someone else's account signs in.
        if (created && req.body.password !== undefined) await setInitialPassword(deps.db, user.id, await hashPassword(req.body.password));
        // Insert-only: a membership made meanwhile (maybe as owner, by an owner) is not overwritten by this request.
        if (!(await addMembership(deps.db, p.orgId, user.id, req.body.role))) throw alreadyMember();
        await announceRevocation(deps, [tags.member(p.orgId, user.id)]);
        await auditTrail(deps, p.orgId, 'member.added', requesterOf(p), user.id, { role: req.body.role, created });
        const member = await findMember(deps.db, p.orgId, user.id);
        if (!member) throw new TroupeError('CONFLICT', 'the member was removed while being added');
        return { status: 201, body: { member: memberView(member), created } };
      },
    }),
    route({
      method: 'patch', path: '/api/org/:orgId/members/:userId', auth: 'org', tags: ['identity'],
      summary: "Change a member's org role (admin/owner; only an owner makes or unmakes an owner); 409 when it would leave the org without an owner, 404 for someone not in the org",
      bodySchema: schemas.changeMemberBody, responseSchema: schemas.memberReply,
      authorize: changeMember,
      async handler(req, deps, { found: member }) {
        const p = orgPrincipal(req);
        if (member.role !== req.body.role) {
          refuseUnless(await changeMemberRole(deps.db, p.orgId, member.user.id, member.role, req.body.role));
          await announceRevocation(deps, [tags.member(p.orgId, member.user.id)]);
          await auditTrail(deps, p.orgId, 'member.role_changed', requesterOf(p), member.user.id, { from: member.role, to: req.body.role });
        }
        return { body: { member: memberView({ ...member, role: req.body.role }), created: false } };
      },
    }),
    route({
      method: 'delete', path: '/api/org/:orgId/members/:userId', auth: 'org', tags: ['identity'],
      summary: 'Remove a member from the org, its projects and teams (admin/owner; only an owner removes an owner); their sessions of this org stop working at once. '
        + '409 for the last owner, 404 for someone not in the org',
      responseSchema: schemas.memberRemovedReply,
      authorize: dropMember,
      async handler(req, deps, { found: member }) {
        const p = orgPrincipal(req);
        refuseUnless(await removeMember(deps.db, p.orgId, member.user.id, member.role));
        await announceRevocation(deps, [tags.member(p.orgId, member.user.id)]);
        await auditTrail(deps, p.orgId, 'member.removed', requesterOf(p), member.user.id, { role: member.role });
        return { body: { userId: member.user.id, removed: true as const } };
      },
    }),
  ];
}
