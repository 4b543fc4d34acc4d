import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../../api.js';
import { asApiError } from '../../data.js';
import type { Me } from '../../me.js';

/**
 * What the administration pages share: their tab strip, who may change what (the server decides in the end and its
 * refusal is shown), a field with a Copy button for a secret shown once, and a way to run one call at a time with
 * its refusal kept for the page to show.
 */
const tabs = [
  ['members', '/settings/members', 'Members'],
  ['api-keys', '/settings/api-keys', 'API keys'],
  ['registration-tokens', '/settings/registration-tokens', 'Workers'],
  ['integrations', '/settings/integrations', 'Integrations'],
  ['budgets', '/settings/budgets', 'Budgets'],
] as const;

export type SettingsTab = (typeof tabs)[number][0];

export function SettingsTabs({ current }: { current: SettingsTab }) {
  return (
    <nav aria-label="Settings" class="settings-tabs">
      <ul>
        {tabs.map(([key, href, label]) => (
          <li key={key}><a href={href} aria-current={current === key ? 'page' : undefined}>{label}</a></li>
        ))}
      </ul>
    </nav>
  );
}

/** Admins and owners run the org (members, keys, tokens, integrations, budgets); the default Cedar policies say the same. */
export const administers = (me: Me): boolean => me.role === 'owner' || me.role === 'admin';

export function AdminOnly({ what }: { what: string }) {
  return <p class="note">Only the org's admins and owners {what}. Ask one of them if you need this.</p>;
}

/** Runs one call at a time; `error` is what the API said about the last one that failed. */
export function useAction(): { busy: boolean; error: ApiError | undefined; run: (fn: () => Promise<void>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const run = async (fn: () => Promise<void>): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      await fn();
      return true;
    } catch (err) {
      setError(asApiError(err));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, clear: () => setError(undefined) };
}

/** Writes to the clipboard where the page may (a secure context), else through the selected field. */
async function copyText(text: string, field: HTMLInputElement | HTMLTextAreaElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (!field) return false;
    field.select();
    return document.execCommand('copy');
  }
}

/** A read-only value (a key shown once, a command line) with a Copy button that says whether it worked. */
export function CopyField({ id, label, value, multiline }: { id: string; label: string; value: string; multiline?: boolean }) {
  const [copied, setCopied] = useState<'yes' | 'no' | ''>('');
  const copy = async () => {
    const field = document.getElementById(id) as HTMLInputElement | HTMLTextAreaElement | null;
    setCopied((await copyText(value, field)) ? 'yes' : 'no');
  };
  return (
    <div class="copy-field">
      <label for={id}>{label}</label>
      <div class="inline-form">
        {multiline
          ? <textarea id={id} readOnly rows={3} spellcheck={false} class="mono" value={value} onFocus={(e) => (e.target as HTMLTextAreaElement).select()} />
          : <input id={id} readOnly spellcheck={false} class="mono" value={value} onFocus={(e) => (e.target as HTMLInputElement).select()} />}
        <button type="button" onClick={copy} aria-describedby={`${id}-copied`}>Copy</button>
        <span id={`${id}-copied`} role="status" class="muted small">
          {copied === 'yes' ? 'Copied.' : copied === 'no' ? 'Copy it by hand: the browser refused.' : ''}
        </span>
      </div>
    </div>
  );
}

export function Section({ id, title, children }: { id: string; title: string; children: ComponentChildren }) {
  return (
    <section class="card stack" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/**
 * A destructive act asked twice: the first press shows what will happen and a second button that does it (no
 * browser dialog, so it reads the same to a screen reader and a keyboard).
 */
export function ConfirmButton({ label, confirm, busy, onConfirm }: { label: string; confirm: string; busy: boolean; onConfirm: () => void }) {
  const [asking, setAsking] = useState(false);
  // Focus follows the swap (the pressed button leaves the page), so a keyboard user is never dropped to the top.
  const [moved, setMoved] = useState(false);
  const first = useRef<HTMLButtonElement>(null);
  const sure = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!moved) return;
    (asking ? sure : first).current?.focus();
  }, [asking, moved]);
  const ask = (yes: boolean) => { setMoved(true); setAsking(yes); };
  if (!asking) return <button type="button" class="button-quiet" ref={first} onClick={() => ask(true)}>{label}</button>;
  return (
    <span class="buttons" role="group" aria-label={confirm}>
      <button type="button" class="button-danger" ref={sure} disabled={busy} onClick={() => { setAsking(false); onConfirm(); }}>{confirm}</button>
      <button type="button" class="button-quiet" onClick={() => ask(false)}>Cancel</button>
    </span>
  );
}

export const personName = (user: { email: string; firstName: string | null; lastName: string | null }): string =>
  [user.firstName, user.lastName].filter(Boolean).join(' ') || user.email;
