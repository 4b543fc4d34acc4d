import { useState } from 'preact/hooks';
import { del, patch, post } from '../../api.js';
import type { OrgRole } from '../../api-types.js';
import { useApi } from '../../data.js';
import { useMe } from '../../me.js';
import { Empty, ErrorNote, Loading, PageHeader, Time } from '../../ui/bits.js';
import { administers, ConfirmButton, personName, Section, SettingsTabs, useAction } from './parts.js';
import { SsoSection } from './sso.js';
import { TeamsSection } from './teams.js';
import type { Member, MemberChange, MemberList, MemberReply, NewMember } from './types.js';

const ROLES: readonly OrgRole[] = ['owner', 'admin', 'member', 'viewer'];
const ROLE_MEANS: Record<OrgRole, string> = {
  owner: 'may do anything, owners included',
  admin: 'runs the org: members, keys, workers, integrations, budgets',
  member: 'dispatches sessions and edits workflows',
  viewer: 'reads everything, changes nothing',
};

/** The roles `me` may hand out: only an owner makes an owner (the server's `members.owner-only` policy). */
const grantable = (role: OrgRole): readonly OrgRole[] => (role === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner'));

/** The org's people: who is in it at which role, adding someone, changing a role, removing; and its teams. */
export function MembersPage() {
  const me = useMe();
  const path = `/api/org/${encodeURIComponent(me.org.id)}/members`;
  const list = useApi<MemberList>(path);
  const action = useAction();
  const [said, setSaid] = useState('');
  const mayManage = administers(me);

  const change = (m: Member, role: OrgRole) => action.run(async () => {
    setSaid('');
    await patch<MemberReply>(`${path}/${encodeURIComponent(m.user.id)}`, { role } satisfies MemberChange);
    setSaid(`${personName(m.user)} is now ${role}.`);
    list.reload();
  });
  const remove = (m: Member) => action.run(async () => {
    setSaid('');
    await del(`${path}/${encodeURIComponent(m.user.id)}`);
    setSaid(`${personName(m.user)} was removed from ${me.org.name}.`);
    list.reload();
  });

  const members = list.data?.members ?? [];
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Members" />
      <SettingsTabs current="members" />
      <p class="muted">Who is in {me.org.name}, at which role. An owner may do anything; an admin {ROLE_MEANS.admin}; a member {ROLE_MEANS.member}; a viewer {ROLE_MEANS.viewer}.</p>
      <ErrorNote error={list.error} title="Members could not be read" />
      <ErrorNote error={action.error} title="Not changed" />
      {said ? <p class="note" role="status">{said}</p> : null}
      {!list.data ? (list.error ? null : <Loading what="members" />) : members.length === 0 ? <Empty title="No members." /> : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Members">
          <table class="list">
            <caption class="sr-only">Members of {me.org.name}</caption>
            <thead><tr><th scope="col">Person</th><th scope="col">Role</th><th scope="col">Joined</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {members.map((m) => {
                const self = m.user.id === me.user?.id;
                // An admin neither changes nor removes an owner; nobody changes or removes themselves here (the page
                // would go on offering what their new role may not do); another admin or owner does it.
                const mayTouch = mayManage && !self && (me.role === 'owner' || m.role !== 'owner');
                return (
                  <tr key={m.user.id} data-member={m.user.email}>
                    <td>{personName(m.user)}{self ? <> <span class="badge">you</span></> : null}{personName(m.user) !== m.user.email ? <span class="row-title">{m.user.email}</span> : null}</td>
                    <td>
                      {mayTouch ? (
                        <select aria-label={`Role of ${m.user.email}`} value={m.role} disabled={action.busy}
                          onChange={(e) => void change(m, (e.target as HTMLSelectElement).value as OrgRole)}>
                          {grantable(me.role).map((r) => <option key={r} value={r}>{r}</option>)}
                        </select>
                      ) : m.role}
                    </td>
                    <td><Time at={m.joinedAt} /></td>
                    <td>{mayTouch ? <ConfirmButton label="Remove" confirm={`Remove ${m.user.email}`} busy={action.busy} onConfirm={() => void remove(m)} /> : null}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {mayManage ? <AddMemberForm path={path} roles={grantable(me.role)} onAdded={(text) => { setSaid(text); list.reload(); }} /> : null}
      <TeamsSection members={members} />
      {mayManage ? <SsoSection /> : null}
    </section>
  );
}

function AddMemberForm({ path, roles, onAdded }: { path: string; roles: readonly OrgRole[]; onAdded: (said: string) => void }) {
  const empty = { email: '', role: 'member' as OrgRole, firstName: '', lastName: '', password: '' };
  const [fields, setFields] = useState(empty);
  const action = useAction();
  const set = (key: keyof typeof fields) => (e: Event) => setFields((f) => ({ ...f, [key]: (e.target as HTMLInputElement).value }));
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const body: NewMember = {
        email: fields.email.trim(), role: fields.role,
        ...(fields.firstName.trim() ? { firstName: fields.firstName.trim() } : {}),
        ...(fields.lastName.trim() ? { lastName: fields.lastName.trim() } : {}),
        ...(fields.password ? { password: fields.password } : {}),
      };
      const added = await post<MemberReply>(path, body);
      setFields(empty);
      onAdded(added.created
        ? `${added.member.user.email} was added as ${added.member.role}${added.member.hasPassword ? ': they sign in with the password you set.' : '.'}`
        : `${added.member.user.email} already had an account and joined as ${added.member.role}; they sign in as before.`);
    });
  };
  return (
    <Section id="add-member-title" title="Add a member">
      <form class="stack" onSubmit={submit}>
        <label for="member-email">Email</label>
        <input id="member-email" type="email" required autoComplete="off" value={fields.email} onInput={set('email')} />
        <label for="member-role">Role</label>
        <select id="member-role" value={fields.role} onChange={set('role')}>
          {roles.map((r) => <option key={r} value={r}>{r}: {ROLE_MEANS[r]}</option>)}
        </select>
        <label for="member-first">First name (optional)</label>
        <input id="member-first" type="text" autoComplete="off" value={fields.firstName} onInput={set('firstName')} />
        <label for="member-last">Last name (optional)</label>
        <input id="member-last" type="text" autoComplete="off" value={fields.lastName} onInput={set('lastName')} />
        <label for="member-password">Initial password (optional, 8 characters or more)</label>
        <input id="member-password" type="password" autoComplete="new-password" minLength={8} value={fields.password} onInput={set('password')} aria-describedby="member-password-note" />
        <p id="member-password-note" class="muted small">Used only when this creates their account: someone who already has one keeps how they sign in. Without one, they sign in through your single sign-on.</p>
        <ErrorNote error={action.error} title="Not added" />
        <button type="submit" disabled={action.busy}>Add member</button>
      </form>
    </Section>
  );
}
