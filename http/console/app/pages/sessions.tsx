import { memo } from 'preact/compat';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { get, withQuery, type ApiError } from '../api.js';
import { take, takeArrived } from '../early.js';
import type { SessionList, SessionStatusEvent } from '../api-types.js';
import { asApiError, useEventStream } from '../data.js';
import { projectName, useMe } from '../me.js';
import { navigate, useLocation } from '../router.js';
import { appendPage, applyEvents, emptyFeed, feedOf, mergeRows, type Feed, type SessionRow } from '../session-feed.js';
import { LIVE_STATUSES, sessionListPath, statusesOf } from '../first-screen.js';
import { Empty, ErrorNote, Live, Loading, money, PageHeader, Status, Time } from '../ui/bits.js';
import { DispatchForm } from './dispatch-form.js';
import { RepositoriesSection } from './repositories.js';

/**
 * Events are applied together, at most this often. Redrawing a list that moves costs the browser the same whether
 * one row changed or fifty (the rows below shift), so a short window keeps the page's cost a small share of a core
 * at hundreds of changes a second, and a person still sees each change within a tenth of a second.
 */
const BATCH_MS = 100;
/** Rows drawn in the page's first frame, more than a window holds: the rest of the page's fifty follow a frame later. */
const FIRST_FRAME_ROWS = 25;
const STATUSES = [...LIVE_STATUSES, 'completed', 'failed', 'stopped'];

/** A row renders again only when its session changed: a burst of events redraws the rows it touched, not all 500. */
const Row = memo(({ row: r, project }: { row: SessionRow; project: string }) => (
  <tr data-session={r.id}>
    <td><a href={`/sessions/${r.id}`}><code>{r.id}</code></a><span class="row-title">{r.title || 'new session'}</span></td>
    <td><Status value={r.status} /></td>
    <td>{project}</td>
    <td>{money(r.costUsd ?? 0)}</td>
    <td><Time at={r.updatedAt} /></td>
  </tr>
));

/**
 * The org's sessions, live: the first page is read once, then every status change arrives over the event stream
 * and is applied in batches (one render per batch window). A stream that cannot resume (`reset`) reloads.
 */
export function Sessions() {
  const me = useMe();
  const { query } = useLocation();
  const status = query.get('status') ?? '';
  const projectId = query.get('project') ?? '';
  const { rows: allRows, cursor, error, loaded, applied, connected, more } = useLiveSessions(status, projectId);
  // Moves when a repository is added or removed, so the dispatch form offers the project's list as it is now.
  const [repositoriesRevision, setRepositoriesRevision] = useState(0);
  // What sits below the window is drawn a frame after the list's first rows: the rest of the rows and the forms.
  const [listDrawn, setListDrawn] = useState(false);
  useEffect(() => { if (loaded) setListDrawn(true); }, [loaded]);
  const rows = listDrawn ? allRows : allRows.slice(0, FIRST_FRAME_ROWS);
  const setFilter = (key: 'status' | 'project', value: string) => {
    const next = new URLSearchParams(location.search);
    if (value === '') next.delete(key);
    else next.set(key, value);
    navigate(`/sessions${next.toString() ? `?${next}` : ''}`);
  };

  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Sessions"><Live connected={connected} /></PageHeader>
      <div class="toolbar" role="group" aria-label="Filters">
        <label>Status
          <select value={status} onChange={(e) => setFilter('status', (e.target as HTMLSelectElement).value)}>
            <option value="">All</option>
            <option value="live">Live (not finished)</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label>Project
          <select value={projectId} onChange={(e) => setFilter('project', (e.target as HTMLSelectElement).value)}>
            <option value="">All projects</option>
            {me.projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
      </div>
      <ErrorNote error={error} title="Sessions could not be loaded" />
      {!loaded ? <Loading what="sessions" /> : rows.length === 0 && !error ? (
        <Empty title={status || projectId ? 'No sessions match these filters.' : 'No sessions yet.'}>
          <p>Dispatch one below (or with <code>POST /api/agent-dispatch</code>). A worker of the project picks it up; start one on your machine with</p>
          <pre><code>npx troupe worker --url {location.origin} --registration-token TOKEN --agent-command 'CMD'</code></pre>
        </Empty>
      ) : (
        <div class="table-wrap" tabIndex={0}>
          <table class="list sessions-list" data-events-applied={applied} data-rows={rows.length}>
            <caption class="sr-only">Sessions, newest first</caption>
            <thead><tr><th scope="col">Session</th><th scope="col">Status</th><th scope="col">Project</th><th scope="col">Cost</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              {rows.map((r) => <Row key={r.id} row={r} project={projectName(me, r.projectId)} />)}
            </tbody>
          </table>
        </div>
      )}
      {cursor !== null ? <button type="button" class="button-quiet" onClick={more}>Show older sessions</button> : null}
      {listDrawn ? (
        <>
          <DispatchForm onDispatched={(id) => navigate(`/sessions/${id}`)} repositoriesRevision={repositoriesRevision} />
          <RepositoriesSection revision={repositoriesRevision} onChanged={() => setRepositoriesRevision((n) => n + 1)} />
        </>
      ) : null}
    </section>
  );
}

/** The sessions matching the filters, kept live as `Sessions` describes; `more` reads the next older page. */
function useLiveSessions(status: string, projectId: string) {
  const listPath = (after?: string) => sessionListPath(status, projectId, after);
  // The first page, when the boot's early read of it has arrived: drawn in the first render, not after an effect.
  const [first] = useState(() => takeArrived<SessionList>(listPath()));
  const drawnEarly = useRef(first !== undefined);
  const [feed, setFeed] = useState<Feed>(() => (first ? feedOf(first.sessions) : emptyFeed()));
  const [cursor, setCursor] = useState<string | null>(first?.nextCursor ?? null);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [loaded, setLoaded] = useState(first !== undefined);
  const applied = useRef(0);
  const pending = useRef<SessionStatusEvent[]>([]);
  const frame = useRef<number | undefined>(undefined);
  useEffect(() => () => clearTimeout(frame.current), []);
  const wanted = statusesOf(status);
  const acceptsStatus = useCallback((s: string) => wanted === undefined || wanted.includes(s), [status]);

  const load = useCallback(() => {
    take<SessionList>(listPath()).then(
      (page) => { setFeed(feedOf(page.sessions)); setCursor(page.nextCursor ?? null); setError(undefined); setLoaded(true); },
      (err: unknown) => { setError(asApiError(err)); setLoaded(true); },
    );
  }, [status, projectId]);
  useEffect(() => {
    if (drawnEarly.current) drawnEarly.current = false;
    else { setLoaded(false); load(); }
  }, [load]);

  const flush = () => {
    frame.current = undefined;
    const batch = pending.current;
    pending.current = [];
    applied.current += batch.length;
    setFeed((f) => applyEvents(f, batch, (e) => acceptsStatus(e.status) && (projectId === '' || e.projectId === projectId)));
  };
  const { connected } = useEventStream(withQuery('/api/sessions/events', { projectId }), {
    'session.status': (data) => {
      pending.current.push(data as SessionStatusEvent);
      // At most one redraw per batch window, drawn on the next frame: a burst costs a few renders a second.
      frame.current ??= window.setTimeout(() => requestAnimationFrame(flush), BATCH_MS);
    },
    reset: () => load(),
  });

  // Sessions first seen in events get their titles (and cost, worker) from one list read, at most once a second.
  const untitledCount = feed.untitled.size;
  useEffect(() => {
    if (untitledCount === 0) return;
    const timer = setTimeout(() => {
      get<SessionList>(listPath()).then((page) => setFeed((f) => mergeRows(f, page.sessions, acceptsStatus)), () => undefined);
    }, 1000);
    return () => clearTimeout(timer);
  }, [untitledCount > 0, feed.order[0]]);

  const more = () => {
    if (cursor === null) return;
    get<SessionList>(listPath(cursor)).then((page) => { setFeed((f) => appendPage(f, page.sessions)); setCursor(page.nextCursor ?? null); }, (err: unknown) => setError(asApiError(err)));
  };
  const rows = useMemo(() => feed.order.map((id) => feed.rows.get(id)!), [feed]);
  return { rows, cursor, error, loaded, applied: applied.current, connected, more };
}
