import { useState } from 'preact/hooks';
import { del, post } from '../../api.js';
import { useApi } from '../../data.js';
import { useMe } from '../../me.js';
import { Empty, ErrorNote, Loading, PageHeader, Status, Time } from '../../ui/bits.js';
import { administers, AdminOnly, ConfirmButton, CopyField, Section, SettingsTabs, useAction } from './parts.js';
import type { ApiKey, ApiKeyList, IssuedApiKey, NewApiKey } from './types.js';

/** The scopes a key may act with (Cedar's key policies): each includes the ones before it. */
const SCOPES = [
  ['read', 'read everything the org has'],
  ['write', 'also dispatch sessions and edit workflows'],
  ['admin', 'also run the org, as an admin'],
] as const;

/** The org's API keys: issue one (its secret shown once, to copy), see them all, revoke one. */
export function ApiKeysPage() {
  const me = useMe();
  const mayManage = administers(me);
  const path = `/api/org/${encodeURIComponent(me.org.id)}/keys`;
  const list = useApi<ApiKeyList>(mayManage ? path : undefined);
  const [issued, setIssued] = useState<IssuedApiKey | undefined>(undefined);
  const action = useAction();
  const [said, setSaid] = useState('');
  const revoke = (key: ApiKey) => action.run(async () => {
    setSaid('');
    await del(`${path}/${encodeURIComponent(key.id)}`);
    if (issued?.id === key.id) setIssued(undefined);
    setSaid(`${key.name} was revoked: it no longer works.`);
    list.reload();
  });
  const keys = list.data?.keys ?? [];
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="API keys" />
      <SettingsTabs current="api-keys" />
      <p class="muted">Scripts, CI and the <code>troupe</code> command line act for {me.org.name} with an API key (<code>TROUPE_TOKEN</code>).</p>
      {!mayManage ? <AdminOnly what="issue, see and revoke API keys" /> : (
        <>
          <NewKeyForm path={path} onIssued={(key) => { setIssued(key); setSaid(''); list.reload(); }} />
          {issued ? (
            <Section id="issued-key-title" title={`Your new key: ${issued.name}`}>
              <p class="note">This is the only time the key is shown: copy it now and keep it somewhere safe.</p>
              <CopyField id="issued-key" label="API key" value={issued.fullKey} />
              <button type="button" class="button-quiet" onClick={() => setIssued(undefined)}>I have copied it</button>
            </Section>
          ) : null}
          <ErrorNote error={list.error} title="API keys could not be read" />
          <ErrorNote error={action.error} title="Not revoked" />
          {said ? <p class="note" role="status">{said}</p> : null}
          {!list.data ? (list.error ? null : <Loading what="API keys" />) : keys.length === 0 ? <Empty title="No API keys yet." /> : (
            <div class="table-wrap" tabIndex={0} role="region" aria-label="API keys">
              <table class="list">
                <caption class="sr-only">API keys of {me.org.name}</caption>
                <thead><tr><th scope="col">Key</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {keys.map((k) => (
                    <tr key={k.id} data-key={k.name}>
                      <td>{k.name}<span class="row-title mono">{k.prefix}…</span></td>
                      <td>{k.scopes.join(', ')}</td>
                      <td><Time at={k.createdAt} /></td>
                      <td>{k.revokedAt ? <>revoked <Time at={k.revokedAt} /></> : <Status value="active" />}</td>
                      <td>{k.revokedAt ? null : <ConfirmButton label="Revoke" confirm={`Revoke ${k.name}`} busy={action.busy} onConfirm={() => void revoke(k)} />}</td>
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

function NewKeyForm({ path, onIssued }: { path: string; onIssued: (key: IssuedApiKey) => void }) {
  const [name, setName] = useState('');
  const [scope, setScope] = useState<(typeof SCOPES)[number][0]>('write');
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const upTo = SCOPES.findIndex(([s]) => s === scope);
      const body: NewApiKey = { name: name.trim(), scopes: SCOPES.slice(0, upTo + 1).map(([s]) => s) };
      onIssued(await post<IssuedApiKey>(path, body));
      setName('');
    });
  };
  return (
    <Section id="new-key-title" title="Create an API key">
      <form class="stack" onSubmit={submit}>
        <label for="key-name">Name</label>
        <input id="key-name" type="text" required maxLength={200} placeholder="what uses it, e.g. CI deploys" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        <fieldset class="stack">
          <legend>What it may do</legend>
          {SCOPES.map(([s, means]) => (
            <label key={s}><input type="radio" name="key-scope" value={s} checked={scope === s} onChange={() => setScope(s)} /> {s}: {means}</label>
          ))}
        </fieldset>
        <ErrorNote error={action.error} title="Not created" />
        <button type="submit" disabled={action.busy}>Create key</button>
      </form>
    </Section>
  );
}
