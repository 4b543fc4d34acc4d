import type { SessionListItem, SessionStatusEvent } from './api-types.js';

/**
 * The live session list as data: rows by id plus their order (newest first), changed by batches of status events.
 * Kept apart from rendering so a burst of events costs one pass and one render per animation frame, however many
 * arrive, and so the rules (filters, caps) are testable without a page.
 */
/** A row of the list, whose status an event may since have moved: events name the status as any string. */
export type SessionRow = Omit<SessionListItem, 'status'> & { readonly status: SessionStatusEvent['status'] };

export interface Feed {
  readonly rows: ReadonlyMap<string, SessionRow>;
  /** Ids newest first. */
  readonly order: readonly string[];
  /** Ids seen in events that the list has no title for yet. */
  readonly untitled: ReadonlySet<string>;
}

/** Rows kept on screen: older ones drop off the end (the list pages further back on request). */
export const MAX_ROWS = 500;

export const emptyFeed = (): Feed => ({ rows: new Map(), order: [], untitled: new Set() });

export function feedOf(rows: readonly SessionRow[]): Feed {
  return { rows: new Map(rows.map((r) => [r.id, r])), order: rows.map((r) => r.id), untitled: new Set() };
}

/** Adds an older page below what is shown (never above: newer rows come from events). */
export function appendPage(feed: Feed, rows: readonly SessionRow[]): Feed {
  const next = new Map(feed.rows);
  const order = [...feed.order];
  for (const r of rows) {
    if (!next.has(r.id)) order.push(r.id);
    next.set(r.id, r);
  }
  return { rows: next, order, untitled: feed.untitled };
}

/** Merges fresh rows (titles for sessions first seen in events, current statuses) without reordering. */
export function mergeRows(feed: Feed, rows: readonly SessionRow[], accepts: (status: string) => boolean): Feed {
  const next = new Map(feed.rows);
  const untitled = new Set(feed.untitled);
  let order = feed.order;
  for (const r of rows) {
    if (!next.has(r.id)) continue;
    untitled.delete(r.id);
    if (accepts(r.status)) next.set(r.id, { ...r, status: next.get(r.id)!.updatedAt > r.updatedAt ? next.get(r.id)!.status : r.status });
  }
  if (next.size !== feed.rows.size) order = order.filter((id) => next.has(id));
  return { rows: next, order, untitled };
}

/**
 * Applies a batch of events in arrival order. A session that leaves the status filter leaves the list; one the list
 * has not seen joins it at the top (its title follows from the next fetch).
 */
export function applyEvents(feed: Feed, events: readonly SessionStatusEvent[], accepts: (e: SessionStatusEvent) => boolean): Feed {
  if (events.length === 0) return feed;
  const rows = new Map(feed.rows);
  const untitled = new Set(feed.untitled);
  const added: string[] = [];
  let removed = false;
  for (const e of events) {
    const known = rows.get(e.sessionId);
    if (!accepts(e)) {
      if (known) {
        rows.delete(e.sessionId);
        untitled.delete(e.sessionId);
        removed = true;
      }
      continue;
    }
    if (known) {
      rows.set(e.sessionId, { ...known, status: e.status, updatedAt: e.at });
    } else {
      rows.set(e.sessionId, { id: e.sessionId, projectId: e.projectId, status: e.status, title: '', workerId: null, costUsd: 0, createdAt: e.at, updatedAt: e.at });
      untitled.add(e.sessionId);
      added.push(e.sessionId);
    }
  }
  let order = added.length > 0 ? [...added.reverse(), ...feed.order] : feed.order;
  if (removed || added.length > 0) {
    const seen = new Set<string>();
    order = order.filter((id) => rows.has(id) && !seen.has(id) && seen.add(id) !== undefined);
  }
  if (order.length > MAX_ROWS) {
    for (const id of order.slice(MAX_ROWS)) {
      rows.delete(id);
      untitled.delete(id);
    }
    order = order.slice(0, MAX_ROWS);
  }
  return { rows, order, untitled };
}
