import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { get, withQuery, type ApiError } from '../api.js';
import type { TranscriptEntry, TranscriptPage } from '../api-types.js';
import { asApiError, useEventStream } from '../data.js';
import { ErrorNote } from '../ui/bits.js';
import {
  appendLive, earlierFrom, emptyWindow, PAGE_SIZE, prependPage, windowOf, type TranscriptWindow,
} from '../transcript-view.js';

/**
 * A session's whole transcript (issue 35 §1): the newest page first, earlier pages on request, followed live from the
 * last seq read (the transcript's own stream sends exactly the entries after it, so nothing shows twice or goes
 * missing), a search over the whole transcript, and the NDJSON download.
 */
export function SessionTranscript({ id }: { id: string }) {
  const base = `/api/public/sessions/${encodeURIComponent(id)}/transcript`;
  const [view, setView] = useState<TranscriptWindow | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [cut, setCut] = useState<TranscriptPage['cut']>(null);
  const [followFrom, setFollowFrom] = useState<number | undefined>(undefined);

  // The newest page: the transcript's last seq first, then the page that ends there.
  useEffect(() => {
    let cancelled = false;
    void (async () => {
      try {
        const head = await get<TranscriptPage>(withQuery(base, { limit: 1 }));
        const after = Math.max(head.purgedThrough, head.lastSeq - PAGE_SIZE);
        const page = await get<TranscriptPage>(withQuery(base, { after, limit: PAGE_SIZE }));
        if (cancelled) return;
        const w = windowOf(page.entries, after);
        setView(w);
        setCut(page.cut);
        setFollowFrom(w.last);
      } catch (err) {
        if (!cancelled) setError(asApiError(err));
      }
    })();
    return () => { cancelled = true; };
  }, [base]);

  // Opened once from the last seq read; EventSource resumes from the last event id (a seq) by itself after a drop.
  const stream = useEventStream(followFrom === undefined ? undefined : withQuery(`${base}/stream`, { after: followFrom }), {
    'transcript.entry': (data) => setView((w) => appendLive(w ?? emptyWindow(), [data as TranscriptEntry])),
  });

  const earlier = async () => {
    if (!view) return;
    const from = Math.max(0, earlierFrom(view));
    try {
      const page = await get<TranscriptPage>(withQuery(base, { after: from, limit: view.before - from }));
      setView((w) => (w ? prependPage(w, page.entries, from) : w));
    } catch (err) {
      setError(asApiError(err));
    }
  };

  return (
    <section aria-labelledby="transcript-title" class="transcript">
      <header class="section-header">
        <h2 id="transcript-title">Transcript</h2>
        <Following connected={stream.connected} />
        <a href={withQuery(base, { format: 'ndjson' })} download={`session-${id}-transcript.ndjson`}>Download (NDJSON)</a>
      </header>
      <TranscriptSearch base={base} />
      <ErrorNote error={error} title="The transcript could not be read" />
      {cut ? <p class="note">The transcript reached its size limit at #{cut.atSeq}; {cut.droppedEntries} later entries ({cut.droppedBytes} bytes) were not kept.</p> : null}
      {view === undefined ? <p class="muted">Reading the transcript…</p> : (
        <>
          {view.before > 0 ? <button type="button" onClick={earlier}>Earlier entries</button> : null}
          {view.entries.length === 0
            ? <p class="muted" data-transcript-empty>No entries yet; they appear here as the session runs.</p>
            : <EntryList entries={view.entries} label="Transcript entries" follow />}
        </>
      )}
    </section>
  );
}

/** Whether the transcript's own stream is open (the page header's Live is the session's status and output streams). */
function Following({ connected }: { connected: boolean }) {
  return <span class={`live ${connected ? 'live-on' : 'live-off'}`} role="status">{connected ? 'Following' : 'Reconnecting to the transcript…'}</span>;
}

/** A search over the whole transcript, page by page of matches; clearing it shows the live view again. */
function TranscriptSearch({ base }: { base: string }) {
  const [query, setQuery] = useState('');
  const [found, setFound] = useState<{ q: string; entries: TranscriptEntry[]; next: number | null } | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const search = async (q: string, after = 0, prior: TranscriptEntry[] = []) => {
    setError(undefined);
    try {
      const page = await get<TranscriptPage>(withQuery(base, { q, after, limit: PAGE_SIZE }));
      setFound({ q, entries: [...prior, ...page.entries], next: page.next });
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <div class="stack">
      <form class="inline-form" role="search" onSubmit={(e) => { e.preventDefault(); if (query.trim() !== '') void search(query.trim()); }}>
        <label for="transcript-search">Search the transcript</label>
        <input id="transcript-search" type="search" maxLength={200} value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        <button type="submit">Search</button>
        {found ? <button type="button" onClick={() => { setFound(undefined); setQuery(''); }}>Clear</button> : null}
      </form>
      <ErrorNote error={error} title="Search refused" />
      {found ? (
        <div data-transcript-matches>
          <p class="muted" role="status">{found.entries.length === 0 ? `No entry contains “${found.q}”.` : `Entries containing “${found.q}”:`}</p>
          {found.entries.length > 0 ? <EntryList entries={found.entries} label="Matching entries" /> : null}
          {found.next !== null ? <button type="button" onClick={() => search(found.q, found.next!, found.entries)}>More matches</button> : null}
        </div>
      ) : null}
    </div>
  );
}

/** With `follow`, a list scrolled to its end stays there as entries arrive; one scrolled back stays where the person left it. */
function EntryList({ entries, label, follow = false }: { entries: readonly TranscriptEntry[]; label: string; follow?: boolean }) {
  const list = useRef<HTMLOListElement>(null);
  const atEnd = useRef(true);
  const lastSeq = entries.at(-1)?.seq;
  useLayoutEffect(() => {
    const el = list.current;
    if (follow && el && atEnd.current) el.scrollTop = el.scrollHeight;
  }, [follow, lastSeq]);
  const onScroll = () => {
    const el = list.current;
    if (el) atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
  };
  return (
    // Focusable: a scrolling region must be reachable from the keyboard.
    <ol class="transcript-entries" aria-label={label} tabIndex={0} ref={list} onScroll={onScroll}>
      {entries.map((e) => (
        <li key={e.seq} data-seq={e.seq} data-entry-kind={e.kind}>
          <span class="muted transcript-seq">#{e.seq}</span>{' '}
          <time dateTime={e.at} title={e.at} class="muted">{e.at.slice(11, 19)}</time>{' '}
          {e.kind === 'output' ? null : <span class="badge">{e.kind}</span>}{' '}
          <span class="transcript-text">{e.text}</span>
        </li>
      ))}
    </ol>
  );
}
