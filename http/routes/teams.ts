import { randomUUID } from 'node:crypto';
import type { Deps } from '../../actors/services/deps.js';
import { TroupeError } from '../../ops/kernel/errors.js';
import type { Route, HttpRequest, Reply, RouteAuthorization, RouteCall } from '../types.js';
import { route, type BodyOf } from '../route.js';
import { findOrgMember } from '../../storage/identity/users.js';
import { findTeam, insertTeam, listTeamMembers, upsertTeamMember } from '../../storage/identity/teams.js';
import * as schemas from '../../schemas/identity/http.js';
import { listTeams, removeTeamMember } from '../../storage/identity/org-admin.js';
import { teamMemberRemovedReply, teamsReply } from '../../schemas/identity/admin-http.js';
import { auditTrail } from './audit-trail.js';
import { orgPrincipal, requesterOf } from '../principal.js';

/** Teams of the caller's org: created, given and relieved of members by its admins, read by its members; another org's team is 404. */

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

export async function listOrgTeams(req: HttpRequest, deps: Deps): Promise<Reply> {
  return { body: { teams: await listTeams(deps.db, orgPrincipal(req).orgId) } };
}

export async function removeFromTeam(req: HttpRequest, deps: Deps, { found: team }: RouteCall<Team>): Promise<Reply> {
  const p = orgPrincipal(req);
  const userId = req.params.userId ?? '';
  if (!(await removeTeamMember(deps.db, team.orgId, team.id, userId))) throw new TroupeError('NOT_FOUND', 'not a member of this team');
  await auditTrail(deps, team.orgId, 'team.member_removed', requesterOf(p), team.id, { userId });
  return { body: { teamId: team.id, userId, removed: true } };
}

export function teamRoutes(): Route<Deps>[] {
  return [
    route({
      method: 'get', path: '/api/org/teams', auth: 'org', tags: ['teams'],
      summary: "The caller's org's teams with how many members each has, oldest first",
      responseSchema: teamsReply,
      authorize: { action: 'read', resource: (_req, p) => ({ type: 'Org', id: p.orgId, orgId: p.orgId }) },
      handler: listOrgTeams,
    }),
    route({
      method: 'delete', path: '/api/org/teams/:id/members/:userId', auth: 'org', tags: ['teams'],
      summary: "Take a member off a team (admin/owner); 404 for another org's team or someone not on it",
      responseSchema: teamMemberRemovedReply, authorize: onTeam('manage-members'), handler: removeFromTeam,
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
