import { useState } from 'preact/hooks';
import { del, post } from '../../api.js';
import { useApi } from '../../data.js';
import { useMe } from '../../me.js';
import { ErrorNote, Loading } from '../../ui/bits.js';
import { administers, ConfirmButton, personName, Section, useAction } from './parts.js';
import type { Member, NewTeam, NewTeamMember, Team, TeamList, TeamMembers } from './types.js';

/** The org's teams: everyone sees them and who is on each; admins and owners create them and move people in and out. */
export function TeamsSection({ members }: { members: readonly Member[] }) {
  const me = useMe();
  const list = useApi<TeamList>('/api/org/teams');
  const mayManage = administers(me);
  const [name, setName] = useState('');
  const create = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void create.run(async () => {
      await post('/api/org/teams', { name: name.trim() } satisfies NewTeam);
      setName('');
      list.reload();
    });
  };
  const teams = list.data?.teams ?? [];
  return (
    <Section id="teams-title" title="Teams">
      <ErrorNote error={list.error} title="Teams could not be read" />
      {!list.data ? (list.error ? null : <Loading what="teams" />) : teams.length === 0 ? <p class="muted">No teams yet.</p> : (
        <ul class="plain teams">
          {teams.map((team) => <TeamItem key={team.id} team={team} members={members} mayManage={mayManage} onChanged={list.reload} />)}
        </ul>
      )}
      {mayManage ? (
        <form class="inline-form" onSubmit={submit}>
          <label for="team-name">New team</label>
          <input id="team-name" type="text" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          <button type="submit" disabled={create.busy}>Create team</button>
        </form>
      ) : null}
      <ErrorNote error={create.error} title="Not created" />
    </Section>
  );
}

function TeamItem({ team, members, mayManage, onChanged }: { team: Team; members: readonly Member[]; mayManage: boolean; onChanged: () => void }) {
  const [open, setOpen] = useState(false);
  const path = `/api/org/teams/${encodeURIComponent(team.id)}/members`;
  const onTeam = useApi<TeamMembers>(open ? path : undefined);
  const action = useAction();
  const [userId, setUserId] = useState('');
  const inTeam = new Set((onTeam.data?.members ?? []).map((m) => m.userId));
  const candidates = members.filter((m) => !inTeam.has(m.user.id));
  const changed = () => { onTeam.reload(); onChanged(); };
  const add = (event: Event) => {
    event.preventDefault();
    const chosen = userId || candidates[0]?.user.id;
    if (!chosen) return;
    void action.run(async () => {
      await post(path, { userId: chosen } satisfies NewTeamMember);
      setUserId('');
      changed();
    });
  };
  const remove = (id: string) => action.run(async () => {
    await del(`${path}/${encodeURIComponent(id)}`);
    changed();
  });
  return (
    <li data-team={team.name}>
      <button type="button" class="button-quiet" aria-expanded={open} onClick={() => setOpen(!open)}>
        {team.name} ({team.memberCount} {team.memberCount === 1 ? 'member' : 'members'})
      </button>
      {open ? (
        <div class="stack team-members">
          <ErrorNote error={onTeam.error} title="Its members could not be read" />
          {!onTeam.data ? (onTeam.error ? null : <Loading what="the team" />) : onTeam.data.members.length === 0 ? <p class="muted">Nobody is on this team.</p> : (
            <ul class="plain">
              {onTeam.data.members.map((m) => (
                <li key={m.userId}>
                  {personName(m.user)} <span class="muted">{m.user.email} · {m.role}</span>{' '}
                  {mayManage ? <ConfirmButton label={`Take ${m.user.email} off`} confirm={`Take ${m.user.email} off ${team.name}`} busy={action.busy} onConfirm={() => void remove(m.userId)} /> : null}
                </li>
              ))}
            </ul>
          )}
          {mayManage && onTeam.data && candidates.length > 0 ? (
            <form class="inline-form" onSubmit={add}>
              <label for={`team-add-${team.id}`}>Add to {team.name}</label>
              <select id={`team-add-${team.id}`} value={userId || candidates[0]?.user.id} onChange={(e) => setUserId((e.target as HTMLSelectElement).value)}>
                {candidates.map((m) => <option key={m.user.id} value={m.user.id}>{m.user.email}</option>)}
              </select>
              <button type="submit" disabled={action.busy}>Add</button>
            </form>
          ) : null}
          <ErrorNote error={action.error} title="Not changed" />
        </div>
      ) : null}
    </li>
  );
}
