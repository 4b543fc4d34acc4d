import type { ComponentChildren } from 'preact';
import type { ApiError } from '../api.js';

/** What the API said, as it said it. */
export function ErrorNote({ error, title }: { error: ApiError | undefined; title?: string }) {
  if (!error) return null;
  return (
    <div class="note note-error" role="alert">
      {title ? <strong>{title}: </strong> : null}
      {error.message}
      {error.code ? <span class="code"> ({error.code})</span> : null}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <p class="muted" role="status">Loading {what}…</p>;
}

const tone: Record<string, string> = {
  pending: 'wait', claimed: 'busy', running: 'busy', paused: 'wait', finalizing: 'busy', completed: 'good', failed: 'bad', stopped: 'muted',
  approved: 'good', rejected: 'bad', escalated: 'wait', published: 'good', draft: 'muted', archived: 'muted', active: 'good',
  waiting: 'wait', suspended: 'wait', open: 'bad', resolved: 'good', live: 'good', silent: 'bad', opened: 'good', skipped: 'muted',
};

export function Status({ value }: { value: string }) {
  return <span class={`status status-${tone[value] ?? 'muted'}`}>{value}</span>;
}

export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  return <time dateTime={at} title={at}>{relative(new Date(at))}</time>;
}

export function relative(date: Date, now = Date.now()): string {
  const seconds = Math.round((now - date.getTime()) / 1000);
  if (Math.abs(seconds) < 5) return 'just now';
  if (Math.abs(seconds) < 60) return `${seconds} s ago`;
  if (Math.abs(seconds) < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (Math.abs(seconds) < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return date.toLocaleDateString();
}

export const money = (usd: number): string => `$${usd.toFixed(usd < 1 ? 4 : 2)}`;

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <h1 id="page-title">{title}</h1>
      {children ? <div class="page-actions">{children}</div> : null}
    </header>
  );
}

export function Live({ connected }: { connected: boolean }) {
  return (
    <span class={`live ${connected ? 'live-on' : 'live-off'}`} role="status">
      {connected ? 'Live' : 'Reconnecting…'}
    </span>
  );
}
