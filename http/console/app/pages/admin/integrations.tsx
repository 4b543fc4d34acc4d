import { useState } from 'preact/hooks';
import { api, del, post } from '../../api.js';
import { useApi } from '../../data.js';
import { projectName, useMe } from '../../me.js';
import { useLocation } from '../../router.js';
import { ErrorNote, Loading, PageHeader, Status, Time } from '../../ui/bits.js';
import { administers, ConfirmButton, CopyField, Section, SettingsTabs, useAction } from './parts.js';
import type { Integrations, OAuthIntegration, OAuthStart, WebhookIntegration, WebhookSecret } from './types.js';

const TITLES: Record<string, string> = { linear: 'Linear', github: 'GitHub', sentry: 'Sentry', circleci: 'CircleCI', vercel: 'Vercel' };
const title = (provider: string) => TITLES[provider] ?? provider;

/**
 * The org's integrations: OAuth connections (Linear and GitHub issues and repositories, Sentry errors), made by
 * sending the browser through the provider's consent and back (the callback returns here with `connected=` or
 * `error=`), and the webhook providers' signing secrets with the URL to paste at the provider.
 */
export function IntegrationsPage() {
  const me = useMe();
  const { query } = useLocation();
  const path = `/api/org/${encodeURIComponent(me.org.id)}/integrations`;
  const list = useApi<Integrations>(path);
  const mayManage = administers(me);
  const connected = query.get('connected');
  const failed = query.get('error');
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Integrations" />
      <SettingsTabs current="integrations" />
      {connected ? <p class="note" role="status">{title(connected)} is connected.</p> : null}
      {failed ? <p class="note note-error" role="alert"><strong>{title(query.get('provider') ?? '')} was not connected: </strong>{failed}</p> : null}
      <ErrorNote error={list.error} title="Integrations could not be read" />
      {!list.data ? (list.error ? null : <Loading what="integrations" />) : (
        <>
          <Section id="oauth-title" title="Connected accounts">
            <p class="muted small">Troupe reads issues and repositories and comments on issues with the account an admin connects here.</p>
            <ul class="plain">
              {list.data.oauth.map((o) => <OAuthItem key={o.provider} item={o} mayManage={mayManage} onChanged={list.reload} />)}
            </ul>
          </Section>
          <Section id="webhooks-title" title="Webhooks">
            <p class="muted small">A provider's events start runs and sessions here once its signing secret is stored: paste the URL and the same secret into the provider's webhook settings.</p>
            <ul class="plain">
              {list.data.webhooks.map((w) => <WebhookItem key={w.provider} item={w} orgPath={path} mayManage={mayManage} onChanged={list.reload} />)}
            </ul>
          </Section>
        </>
      )}
    </section>
  );
}

function OAuthItem({ item, mayManage, onChanged }: { item: OAuthIntegration; mayManage: boolean; onChanged: () => void }) {
  const action = useAction();
  const name = title(item.provider);
  const c = item.connection;
  const connect = () => action.run(async () => {
    const start = await post<OAuthStart>(`/api/integrations/${encodeURIComponent(item.provider)}/oauth/authorize`);
    // The provider asks the person to consent, then sends the browser to the callback, which sends it back here.
    location.assign(start.authorizeUrl);
  });
  const disconnect = () => action.run(async () => {
    await del(`/api/integrations/${encodeURIComponent(item.provider)}/oauth`);
    onChanged();
  });
  return (
    <li data-integration={item.provider} class="integration">
      <h3>{name}</h3>
      {c ? (
        <p>
          <Status value={c.status === 'connected' ? 'active' : 'suspended'} /> <span>{c.status === 'connected' ? 'Connected' : 'Needs connecting again: the provider refused the stored grant'}</span>{' '}
          <Time at={c.connectedAt} />{c.scope ? <span class="muted small"> · scope {c.scope}</span> : null}
        </p>
      ) : <p class="muted">Not connected.</p>}
      {!item.configured ? (
        <p class="muted small">This deployment has no {name} OAuth app: its operator sets <code>TROUPE_{item.provider.toUpperCase()}_OAUTH_CLIENT_ID</code> and <code>…_CLIENT_SECRET</code>.</p>
      ) : mayManage ? (
        <div class="buttons">
          <button type="button" disabled={action.busy} onClick={() => void connect()}>{c ? `Reconnect ${name}` : `Connect ${name}`}</button>
          {c ? <ConfirmButton label={`Disconnect ${name}`} confirm={`Yes, disconnect ${name}`} busy={action.busy} onConfirm={() => void disconnect()} /> : null}
        </div>
      ) : null}
      <ErrorNote error={action.error} title={`${name} not changed`} />
    </li>
  );
}

function WebhookItem({ item, orgPath, mayManage, onChanged }: { item: WebhookIntegration; orgPath: string; mayManage: boolean; onChanged: () => void }) {
  const me = useMe();
  const name = title(item.provider);
  const [secret, setSecret] = useState('');
  const [projectId, setProjectId] = useState(item.projectId ?? '');
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const save = (event: Event) => {
    event.preventDefault();
    setSaved(false);
    void action.run(async () => {
      const body: WebhookSecret = { signingSecret: secret, ...(projectId ? { projectId } : {}) };
      await api('PUT', `${orgPath}/${encodeURIComponent(item.provider)}`, body);
      setSecret('');
      setSaved(true);
      onChanged();
    });
  };
  return (
    <li data-webhook={item.provider} class="integration">
      <h3>{name}</h3>
      <p>
        {item.connected ? <><Status value="active" /> Signing secret stored <Time at={item.updatedAt} />{item.projectId ? <>, events go to {projectName(me, item.projectId)}</> : null}</> : <span class="muted">No signing secret yet: deliveries are refused.</span>}
      </p>
      <CopyField id={`webhook-url-${item.provider}`} label={`${name} webhook URL`} value={`${location.origin}${item.webhookUrl}`} />
      {mayManage ? (
        <form class="inline-form" onSubmit={save}>
          <label for={`webhook-secret-${item.provider}`}>{item.connected ? 'Replace the signing secret' : 'Signing secret'}</label>
          <input id={`webhook-secret-${item.provider}`} type="password" required minLength={8} maxLength={512} autoComplete="off" value={secret} onInput={(e) => setSecret((e.target as HTMLInputElement).value)} />
          {me.projects.length > 1 ? (
            <label>Project
              <select value={projectId} onChange={(e) => setProjectId((e.target as HTMLSelectElement).value)}>
                <option value="">the first project</option>
                {me.projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
              </select>
            </label>
          ) : null}
          <button type="submit" disabled={action.busy}>Save {name} secret</button>
          {saved ? <span role="status" class="muted small">Saved.</span> : null}
        </form>
      ) : null}
      <ErrorNote error={action.error} title={`${name} webhook not changed`} />
    </li>
  );
}
