import type { Knex } from 'knex';
import { isUuid, iso, toTeam, toUser, type TeamMemberRecord, type TeamRecord, type TeamRole } from './rows.js';

/** Teams are org data: every query names the org, so another org's team id reads as absent. */

export async function insertTeam(db: Knex, team: { id: string; orgId: string; name: string }): Promise<TeamRecord> {
  const [row] = await db('teams').insert({ id: team.id, org_id: team.orgId, name: team.name }).returning('*');
  return toTeam(row);
}

export async function findTeam(db: Knex, orgId: string, teamId: string): Promise<TeamRecord | undefined> {
  if (!isUuid(teamId)) return undefined;
  const row = await db('teams').where({ org_id: orgId, id: teamId }).first();
  return row ? toTeam(row) : undefined;
}

/** Adds the user or changes their role; `added_at` keeps the first time they joined. */
export async function upsertTeamMember(db: Knex, orgId: string, teamId: string, userId: string, role: TeamRole): Promise<void> {
  await db('team_members')
    .insert({ org_id: orgId, team_id: teamId, user_id: userId, role })
    .onConflict(['team_id', 'user_id']).merge({ role });
}

export async function listTeamMembers(db: Knex, orgId: string, teamId: string): Promise<TeamMemberRecord[]> {
  const rows = await db('team_members as tm')
    .join('users as u', 'u.id', 'tm.user_id')
    .where({ 'tm.org_id': orgId, 'tm.team_id': teamId })
    .orderBy([{ column: 'tm.added_at' }, { column: 'u.id' }])
    .select('u.*', 'tm.role as team_role', 'tm.added_at');
  return rows.map((r: Record<string, unknown>) => ({
    userId: String(r.id),
    role: r.team_role as TeamRole,
    addedAt: iso(r.added_at),
    user: toUser(r),
  }));
}
