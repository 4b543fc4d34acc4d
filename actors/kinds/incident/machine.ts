import { accept, reject } from '../../runtime/machine.js';
import { choose, defineMachine, type Take } from '../../runtime/define-machine.js';
import { incidentUrl, type IncidentChange } from '../../../schemas/governance/incident.js';
import type { IncidentRow } from '../../../storage/governance/incidents.js';

/**
 * The incident actor (`incident/<incidentId>`) owns one incident reported by a provider. Its id is derived from
 * (org, source, provider's incident id) (`incidentIdFor`), so every event about the same incident reaches the same
 * actor and is decided in order.
 *
 * Lifecycle:
 * - absent:   nothing heard yet. Any event creates it: providers retry and reorder, so an `updated` or `resolved`
 *             for an unknown incident is still news worth keeping.
 * - open:     reported and not resolved; `status` holds the provider's own status word.
 * - resolved: the provider resolved it. An `updated` carrying a non-closed status re-opens it (incident.io can
 *             re-open); other events keep it resolved and refresh its fields.
 */

export interface IncidentFields {
  readonly title?: string;
  readonly severity?: string | null;
  readonly status?: string | null;
  readonly summary?: string | null;
  readonly url?: string | null;
}

/** An incident as the actor holds it: the same record its read model stores. */
export type IncidentRecord = IncidentRow;

export interface IncidentState {
  readonly incident: IncidentRecord | null;
}

export interface IncidentMsg {
  readonly type: 'incident.record';
  readonly orgId: string;
  readonly source: string;
  readonly externalId: string;
  readonly change: IncidentChange;
  readonly fields: IncidentFields;
}

export interface IncidentReply {
  readonly incidentId: string;
  readonly created: boolean;
  readonly updated: boolean;
  readonly resolved: boolean;
}

export type IncidentEffect = {
  readonly type: 'incidentWritten';
  readonly incident: IncidentRecord;
  readonly change: IncidentChange;
  readonly created: boolean;
};

export const incidentLifecycle = ['absent', 'open', 'resolved'] as const;
export type IncidentLifecycle = (typeof incidentLifecycle)[number];

/** Provider status words that mean the incident is over. */
const closedStatuses = new Set(['resolved', 'closed', 'post-incident', 'post_incident', 'learning', 'declined', 'merged', 'canceled', 'cancelled']);
export const isClosedStatus = (status: string | null | undefined): boolean => status != null && closedStatuses.has(status.toLowerCase());

export const initialIncidentState = (): IncidentState => ({ incident: null });
export const lifecycleOf = (s: IncidentState): IncidentLifecycle => (s.incident === null ? 'absent' : s.incident.resolvedAt === null ? 'open' : 'resolved');

/**
 * Any event about an incident is news worth keeping: it creates the incident if need be, resolves it when the
 * provider says so, and re-opens a resolved one on an update with a status that is not closed.
 */
const record: Take<IncidentState, IncidentMsg, IncidentEffect, IncidentReply, IncidentLifecycle, readonly IncidentLifecycle[]> = (state, msg, ctx) => {
  const current = state.incident;
  const f = msg.fields;
  const resolving = msg.change === 'resolved' || isClosedStatus(f.status);
  const reopening = ctx.from === 'resolved' && msg.change === 'updated' && f.status != null && !isClosedStatus(f.status);
  const resolvedAt = resolving ? (current?.resolvedAt ?? ctx.now) : reopening ? null : (current?.resolvedAt ?? null);
  const next: IncidentRecord = {
    id: ctx.id,
    orgId: msg.orgId,
    source: msg.source,
    externalId: msg.externalId,
    title: f.title ?? current?.title ?? msg.externalId,
    severity: f.severity !== undefined ? f.severity : (current?.severity ?? null),
    status: f.status ?? (msg.change === 'resolved' ? 'resolved' : current?.status ?? 'open'),
    summary: f.summary !== undefined ? f.summary : (current?.summary ?? null),
    // Whoever sent the message, only an http(s) link is kept (the mapping drops others; this is the one place all pass).
    url: f.url !== undefined ? incidentUrl(f.url) : (current?.url ?? null),
    createdAt: current?.createdAt ?? ctx.now,
    updatedAt: ctx.now,
    resolvedAt,
  };
  const created = current === null;
  const reply: IncidentReply = {
    incidentId: ctx.id,
    created,
    updated: !created,
    resolved: resolvedAt !== null && (current === null || current.resolvedAt === null),
  };
  return accept({ incident: next }, reply, [{ type: 'incidentWritten', incident: next, change: msg.change, created }]);
};

export const incidentMachine = defineMachine<IncidentState, IncidentMsg, IncidentEffect, IncidentReply, IncidentLifecycle>({
  statuses: incidentLifecycle,
  messageTypes: ['incident.record'],
  statusOf: lifecycleOf,
  // Every event about this incident names the same (org, source, provider id) its id was derived from.
  screen: (state, msg) => {
    const current = state.incident;
    return current !== null && (current.orgId !== msg.orgId || current.source !== msg.source || current.externalId !== msg.externalId)
      ? reject('NOT_FOUND', 'incident not found')
      : undefined;
  },
  refuse: (from) => reject('ILLEGAL_TRANSITION', 'incident cannot take this event', { from }),
  table: {
    absent: { 'incident.record': choose(['open', 'resolved'], record) },
    open: { 'incident.record': choose(['open', 'resolved'], record) },
    resolved: { 'incident.record': choose(['resolved', 'open'], record) },
  },
});

