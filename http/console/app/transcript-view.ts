import type { TranscriptEntry } from './api-types.js';

/**
 * The transcript panel's entries as data (issue 35 §1): a window of a session's transcript, in seq order, that grows
 * at its end as the live stream sends entries and at its start when the person pages back, and drops its oldest
 * entries past `MAX_SHOWN` so a session of a million lines never fills the page (they stay a click away). Pure, so the
 * rules are testable without a browser.
 */
export const PAGE_SIZE = 200;
export const MAX_SHOWN = 2000;

export interface TranscriptWindow {
  readonly entries: readonly TranscriptEntry[];
  /** The seq before the first entry shown: 0 when the window starts at the transcript's start. */
  readonly before: number;
  /** The last seq shown or known to be read (the follow stream resumes after it). */
  readonly last: number;
}

export const emptyWindow = (): TranscriptWindow => ({ entries: [], before: 0, last: 0 });

/** The window after a first page read from `after` (the newest entries of the transcript). */
export function windowOf(entries: readonly TranscriptEntry[], after: number): TranscriptWindow {
  return { entries, before: after, last: entries.at(-1)?.seq ?? after };
}

/** Appends entries that follow what is shown (a live entry, in seq order); one already shown is ignored. */
export function appendLive(w: TranscriptWindow, incoming: readonly TranscriptEntry[]): TranscriptWindow {
  const fresh = incoming.filter((e) => e.seq > w.last);
  if (fresh.length === 0) return w;
  let entries = [...w.entries, ...fresh];
  let before = w.before;
  if (entries.length > MAX_SHOWN) {
    const dropped = entries.length - MAX_SHOWN;
    before = entries[dropped - 1]!.seq;
    entries = entries.slice(dropped);
  }
  return { entries, before, last: fresh.at(-1)!.seq };
}

/** Puts an earlier page (entries before the window) in front; `from` is the `after` it was read from. */
export function prependPage(w: TranscriptWindow, page: readonly TranscriptEntry[], from: number): TranscriptWindow {
  const earlier = page.filter((e) => e.seq <= w.before);
  return { entries: [...earlier, ...w.entries], before: from, last: w.last };
}

/** Where the page before the window starts (`after` for it), reading at most PAGE_SIZE entries. */
export const earlierFrom = (w: TranscriptWindow): number => Math.max(0, w.before - PAGE_SIZE);

/** Whether an entry ends the session's run (a person watching is told it ended). */
export const endsSession = (e: TranscriptEntry): boolean => e.kind === 'status' && ['completed', 'failed', 'stopped'].includes(e.status ?? '');
