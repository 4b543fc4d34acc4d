import { useState } from 'preact/hooks';
import { del, post } from '../../api.js';
import { AGENT_PRESETS, type AgentPreset } from '../../api-types.js';
import { useApi } from '../../data.js';
import { projectName, useMe } from '../../me.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../../ui/bits.js';
import { administers, AdminOnly, ConfirmButton, CopyField, Section, SettingsTabs, useAction } from './parts.js';
import type { IssuedRegistrationToken, NewRegistrationToken, RegistrationToken, RegistrationTokenList } from './types.js';

/** A word a POSIX shell takes literally: single quotes, each inner one closed, escaped and reopened. */
const shellWord = (text: string): string => (/^[A-Za-z0-9_./:@=-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);

/**
 * The line that starts a worker on another machine (ops/cli/worker/command.ts's flags). The token goes in the
 * environment rather than a flag, so it is not in the process list of that machine.
 */
export function workerCommand(token: string, origin: string, agent: AgentPreset, agentCommand: string): string {
  const agentFlags = agent === 'command' ? `--agent-command ${shellWord(agentCommand || './run-agent.sh')}` : `--agent ${agent}`;
  return `TROUPE_REGISTRATION_TOKEN=${shellWord(token)} troupe-worker --url ${shellWord(origin)} ${agentFlags}`;
}

/** Registration tokens: what a worker machine presents once to join the org; issued with its command line, revoked. */
export function RegistrationTokensPage() {
  const me = useMe();
  const mayManage = administers(me);
  const path = `/api/org/${encodeURIComponent(me.org.id)}/registration-tokens`;
  const list = useApi<RegistrationTokenList>(mayManage ? path : undefined);
  const [issued, setIssued] = useState<(IssuedRegistrationToken & { name: string }) | undefined>(undefined);
  const action = useAction();
  const [said, setSaid] = useState('');
  const revoke = (token: RegistrationToken) => action.run(async () => {
    setSaid('');
    await del(`${path}/${encodeURIComponent(token.id)}`);
    if (issued?.id === token.id) setIssued(undefined);
    setSaid(`${token.name} was revoked: no worker can join with it, and those that did are cut off.`);
    list.reload();
  });
  const tokens = list.data?.registrationTokens ?? [];
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Workers" />
      <SettingsTabs current="registration-tokens" />
      <p class="muted">A worker machine joins {me.org.name} with a registration token and then runs its sessions. The ones running now are on the <a href="/fleet">Fleet</a> page.</p>
      {!mayManage ? <AdminOnly what="issue, see and revoke registration tokens" /> : (
        <>
          <NewTokenForm path={path} onIssued={(token) => { setIssued(token); setSaid(''); list.reload(); }} />
          {issued ? <IssuedToken token={issued} onDone={() => setIssued(undefined)} /> : null}
          <ErrorNote error={list.error} title="Registration tokens could not be read" />
          <ErrorNote error={action.error} title="Not revoked" />
          {said ? <p class="note" role="status">{said}</p> : null}
          {!list.data ? (list.error ? null : <Loading what="registration tokens" />) : tokens.length === 0 ? <Empty title="No registration tokens yet." /> : (
            <div class="table-wrap" tabIndex={0} role="region" aria-label="Registration tokens">
              <table class="list">
                <caption class="sr-only">Registration tokens of {me.org.name}</caption>
                <thead><tr><th scope="col">Token</th><th scope="col">Projects</th><th scope="col">Created</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {tokens.map((t) => (
                    <tr key={t.id} data-token={t.name}>
                      <td>{t.name}<span class="row-title mono">{t.prefix}…</span></td>
                      <td>{t.projects.length === 0 ? 'all' : t.projects.map((id) => projectName(me, id)).join(', ')}</td>
                      <td><Time at={t.createdAt} /></td>
                      <td>{t.revokedAt ? <>revoked <Time at={t.revokedAt} /></> : <Status value="active" />}</td>
                      <td>{t.revokedAt ? null : <ConfirmButton label="Revoke" confirm={`Revoke ${t.name}`} busy={action.busy} onConfirm={() => void revoke(t)} />}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}

function IssuedToken({ token, onDone }: { token: IssuedRegistrationToken & { name: string }; onDone: () => void }) {
  const [agent, setAgent] = useState<AgentPreset>('claude-code');
  const [agentCommand, setAgentCommand] = useState('');
  return (
    <Section id="issued-token-title" title={`Your new registration token: ${token.name}`}>
      <p class="note">This is the only time the token is shown: copy it, or the command below, now.</p>
      <CopyField id="issued-token" label="Registration token" value={token.registrationToken} />
      <label for="worker-agent">The agent the worker runs</label>
      <select id="worker-agent" value={agent} onChange={(e) => setAgent((e.target as HTMLSelectElement).value as AgentPreset)}>
        {Object.entries(AGENT_PRESETS).map(([preset, label]) => <option key={preset} value={preset}>{label}</option>)}
      </select>
      {agent === 'command' ? (
        <>
          <label for="worker-agent-command">Its shell command</label>
          <input id="worker-agent-command" type="text" placeholder="./run-agent.sh" value={agentCommand} onInput={(e) => setAgentCommand((e.target as HTMLInputElement).value)} />
        </>
      ) : null}
      <CopyField id="worker-command" label="Run this on the worker machine (with troupe-worker installed: npm run pack:worker builds its package)"
        value={workerCommand(token.registrationToken, location.origin, agent, agentCommand)} multiline />
      <button type="button" class="button-quiet" onClick={onDone}>I have copied it</button>
    </Section>
  );
}

function NewTokenForm({ path, onIssued }: { path: string; onIssued: (token: IssuedRegistrationToken & { name: string }) => void }) {
  const me = useMe();
  const [name, setName] = useState('');
  const [projects, setProjects] = useState<ReadonlySet<string>>(new Set());
  const action = useAction();
  const toggle = (id: string) => setProjects((now) => {
    const next = new Set(now);
    if (next.has(id)) next.delete(id); else next.add(id);
    return next;
  });
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const body: NewRegistrationToken = { name: name.trim(), projects: [...projects] };
      const issued = await post<IssuedRegistrationToken>(path, body);
      onIssued({ ...issued, name: body.name ?? '' });
      setName('');
      setProjects(new Set());
    });
  };
  return (
    <Section id="new-token-title" title="Add a worker machine">
      <form class="stack" onSubmit={submit}>
        <label for="token-name">Name</label>
        <input id="token-name" type="text" required maxLength={200} placeholder="the machine or pool, e.g. build-farm" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        {me.projects.length > 0 ? (
          <fieldset class="stack">
            <legend>Projects its workers serve (none checked: all of them)</legend>
            {me.projects.map((p) => (
              <label key={p.id}><input type="checkbox" checked={projects.has(p.id)} onChange={() => toggle(p.id)} /> {p.name}</label>
            ))}
          </fieldset>
        ) : null}
        <ErrorNote error={action.error} title="Not created" />
        <button type="submit" disabled={action.busy}>Create registration token</button>
      </form>
    </Section>
  );
}
