import { useState } from 'preact/hooks';
import { post } from '../../api.js';
import { useApi } from '../../data.js';
import { useMe } from '../../me.js';
import { ErrorNote, Loading } from '../../ui/bits.js';
import { CopyField, useAction } from './parts.js';
import type { SsoDomain, SsoSettings } from './types.js';

const STATUS_SAYS: Record<SsoDomain['status'], { label: string; tone: string; means: string }> = {
  pending: { label: 'not verified', tone: 'wait', means: 'Its people sign in with passwords until the TXT record below is published and verified' },
  verified: { label: 'verified', tone: 'good', means: "Its people sign in at the org's provider" },
  taken: { label: 'verified by another org', tone: 'bad', means: "Another org proved this domain first; its people sign in at that org's provider" },
};

/**
 * How the org's people sign in (decisions 0083, 0091): its single sign-on provider and each claimed email domain with
 * whether it is proven, the DNS TXT record that proves it, and (for owners) a Verify button. Admins read it; the
 * settings themselves are set through the API. Read only once opened: an org without single sign-on answers 404, which
 * the members page should not cost every visit.
 */
export function SsoSection() {
  const [open, setOpen] = useState(false);
  return (
    <details class="card stack" aria-label="Single sign-on" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary><strong>Single sign-on</strong> <span class="muted small">the org's provider and its email domains</span></summary>
      {open ? <SsoSettingsView /> : null}
    </details>
  );
}

function SsoSettingsView() {
  const me = useMe();
  const path = `/api/org/${encodeURIComponent(me.org.id)}/sso`;
  const sso = useApi<SsoSettings>(path);
  const none = sso.error?.status === 404;
  return (
    <>
      {none ? <p class="muted">{me.org.name} has no single sign-on: everyone signs in with a password. An owner sets it with <code>PUT {path}</code>.</p> : null}
      {none ? null : <ErrorNote error={sso.error} title="Single sign-on could not be read" />}
      {!sso.data ? (sso.error ? null : <Loading what="single sign-on" />) : (
        <>
          <dl class="facts">
            <dt>Provider</dt><dd class="mono">{sso.data.issuer}</dd>
            <dt>Redirect URI</dt><dd class="mono">{sso.data.redirectUri}</dd>
            <dt>Passwords</dt><dd>{sso.data.enforce ? 'refused for the verified domains' : 'still accepted'}</dd>
          </dl>
          <p class="muted small">A domain routes sign-ins to the provider only once verified: publish its TXT record at your DNS host, then press Verify.</p>
          {sso.data.domains.map((d) => <DomainClaim key={d.domain} path={path} claim={d} owner={me.role === 'owner'} onVerified={sso.reload} />)}
        </>
      )}
    </>
  );
}

function DomainClaim({ path, claim, owner, onVerified }: { path: string; claim: SsoDomain; owner: boolean; onVerified: () => void }) {
  const action = useAction();
  const [said, setSaid] = useState('');
  const says = STATUS_SAYS[claim.status];
  const key = claim.domain.replace(/[^a-z0-9]/g, '-');
  const verify = () => action.run(async () => {
    setSaid('');
    await post<SsoDomain>(`${path}/domains/${encodeURIComponent(claim.domain)}/verify`);
    setSaid(`${claim.domain} is verified.`);
    onVerified();
  });
  return (
    <div class="stack" data-domain={claim.domain}>
      <h3>{claim.domain} <span class={`status status-${says.tone}`}>{says.label}</span></h3>
      <p class="muted small">{says.means}.</p>
      {claim.status === 'pending' ? (
        <>
          <CopyField id={`txt-name-${key}`} label="TXT record name" value={claim.txtName} />
          <CopyField id={`txt-value-${key}`} label="TXT record value" value={claim.txtValue} />
          {owner
            ? <p><button type="button" disabled={action.busy} onClick={() => void verify()}>Verify {claim.domain}</button></p>
            : <p class="muted small">An owner of the org verifies it.</p>}
        </>
      ) : null}
      {said ? <p class="note" role="status">{said}</p> : null}
      <ErrorNote error={action.error} title="Not verified" />
    </div>
  );
}
