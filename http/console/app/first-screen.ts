/**
 * The reads a signed-in console makes before it can draw a page: who the person is, and on the sessions page its
 * first page of the list. The node names them in the page it serves to a signed-in browser (preload hints, see
 * ../routes.ts) and the page asks for exactly these paths, so the browser answers the page's reads from what it
 * fetched while the scripts were still loading. No imports: the node reads this file too.
 */
export const WHOAMI_PATH = '/api/cli/whoami';
export const ORG_LIST_PATH = '/api/org/list';

export const LIVE_STATUSES = ['pending', 'claimed', 'running', 'paused', 'finalizing'];
/** The statuses a filter of the page shows: all (`''`), the live ones (`live`), or the one named. */
export const statusesOf = (filter: string): string[] | undefined => (filter === '' ? undefined : filter === 'live' ? LIVE_STATUSES : [filter]);

/** One page of the session list as the page's filters (`status`, `project` in its address) have it. */
export function sessionListPath(status: string, projectId: string, cursor?: string): string {
  const query = new URLSearchParams();
  const statuses = statusesOf(status);
  if (statuses !== undefined) query.set('status', statuses.join(','));
  if (projectId !== '') query.set('projectId', projectId);
  query.set('limit', '50');
  if (cursor !== undefined && cursor !== '') query.set('cursor', cursor);
  return `/api/sessions?${query}`;
}

/** The page's own first read at this address (the list on `/` and `/sessions`), or undefined. */
export function firstPageRead(path: string, query: URLSearchParams): string | undefined {
  const trimmed = path.replace(/\/+$/, '');
  if (trimmed !== '' && trimmed !== '/sessions') return undefined;
  return sessionListPath(query.get('status') ?? '', query.get('project') ?? '');
}

/** Every read the page at this address makes before its first screen, for a signed-in person. */
export function firstScreenReads(path: string, query: URLSearchParams): string[] {
  const page = firstPageRead(path, query);
  return [WHOAMI_PATH, ORG_LIST_PATH, ...(page === undefined ? [] : [page])];
}

/** The meta element the node adds to a page it serves to a signed-in browser: its session was checked with the page. */
export const SIGNED_IN_META = 'troupe-signed-in';
