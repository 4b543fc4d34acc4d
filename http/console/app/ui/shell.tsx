import type { ComponentChildren } from 'preact';
import { useMe } from '../me.js';

const sections = [
  ['sessions', '/sessions', 'Sessions'],
  ['fleet', '/fleet', 'Fleet'],
  ['approvals', '/approvals', 'Approvals'],
  ['workflows', '/workflows', 'Workflows'],
  ['policies', '/policies', 'Policies'],
  ['incidents', '/incidents', 'Incidents'],
  ['audit', '/audit', 'Audit'],
  ['settings', '/settings/members', 'Settings'],
] as const;

export function Shell({ current, onSignOut, children }: { current: string; onSignOut: () => void; children: ComponentChildren }) {
  const me = useMe();
  return (
    <div class="shell">
      <a class="skip" href="#main">Skip to content</a>
      <header class="topbar">
        <a class="brand" href="/" aria-label="Troupe console, sessions">
          <img src="/assets/icon.svg" alt="" width="24" height="24" /> Troupe
        </a>
        <nav aria-label="Sections">
          <ul>
            {sections.map(([key, href, label]) => (
              <li key={key}><a href={href} aria-current={current === key ? 'page' : undefined}>{label}</a></li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span class="who-name" title={me.user?.email ?? ''}>{me.user?.email ?? 'signed in'}</span>
          <span class="who-role">{me.org.name} · {me.role}</span>
          <button type="button" class="button-quiet" onClick={onSignOut}>Sign out</button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>{children}</main>
    </div>
  );
}
