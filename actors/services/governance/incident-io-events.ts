import { TroupeError } from '../../../ops/kernel/errors.js';
import { INCIDENT_TEXT_MAX, INCIDENT_TITLE_MAX, incidentUrl, type IncidentChange } from '../../../schemas/governance/incident.js';
import type { IncidentFields } from '../../kinds/incident/machine.js';

/**
 * Maps an incident.io delivery (already verified) to an incident change. Two vocabularies are understood:
 * - the spec's: `incident.created` / `incident.updated` / `incident.resolved` with the incident in `data`;
 * - incident.io's own: `public_incident.incident_created_v2`, `…incident_updated_v2`,
 *   `…incident_status_updated_v2`, with the incident under a member named after the event type (or in `data`).
 * A status update whose new status is a closed one resolves. Anything else is `undefined`: acknowledged, skipped.
 */
const eventChanges: Readonly<Record<string, IncidentChange>> = {
  'incident.created': 'created',
  'incident.updated': 'updated',
  'incident.resolved': 'resolved',
  'public_incident.incident_created_v2': 'created',
  'public_incident.incident_updated_v2': 'updated',
  'public_incident.incident_status_updated_v2': 'updated',
};

export interface MappedIncidentEvent {
  readonly eventType: string;
  readonly change: IncidentChange;
  readonly externalId: string;
  readonly fields: IncidentFields;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function eventTypeOf(body: unknown): string {
  if (!isObject(body) || typeof body.event_type !== 'string' || body.event_type.length === 0 || body.event_type.length > 200) {
    throw new TroupeError('VALIDATION_FAILED', 'event_type must be a non-empty string', { field: 'event_type' });
  }
  return body.event_type;
}

/** Undefined for event types we do not handle; throws VALIDATION_FAILED when a handled one lacks an incident id. */
export function mapIncidentEvent(body: unknown): MappedIncidentEvent | undefined {
  const eventType = eventTypeOf(body);
  const change = eventChanges[eventType];
  if (change === undefined) return undefined;
  const envelope = body as Json;
  const data = isObject(envelope.data) ? envelope.data : isObject(envelope[eventType]) ? (envelope[eventType] as Json) : undefined;
  if (!data) throw new TroupeError('VALIDATION_FAILED', 'data must be an object', { field: 'data' });
  // Status updates carry the incident beside the old and new status.
  const incident = isObject(data.incident) ? data.incident : data;
  const externalId = text(incident.id, 200) ?? text(incident.external_id, 200);
  if (!externalId) throw new TroupeError('VALIDATION_FAILED', 'data.id must name the incident', { field: 'data.id' });
  const status = named(data.new_status, 200) ?? named(incident.incident_status, 200) ?? text(incident.status, 200);
  const fields: IncidentFields = {
    ...(text(incident.name, INCIDENT_TITLE_MAX) ?? text(incident.title, INCIDENT_TITLE_MAX)
      ? { title: (text(incident.name, INCIDENT_TITLE_MAX) ?? text(incident.title, INCIDENT_TITLE_MAX))! } : {}),
    ...(incident.severity !== undefined ? { severity: named(incident.severity, 200) ?? null } : {}),
    ...(status !== undefined ? { status } : {}),
    ...(incident.summary !== undefined ? { summary: text(incident.summary, INCIDENT_TEXT_MAX) ?? null } : {}),
    ...(incident.permalink !== undefined || incident.url !== undefined
      ? { url: incidentUrl(incident.permalink) ?? incidentUrl(incident.url) } : {}),
  };
  return { eventType, change, externalId, fields };
}

function text(value: unknown, max: number): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string' || value.length === 0) return undefined;
  return value.slice(0, max);
}

/** incident.io sends severities and statuses as `{name, category?}`; the category is the stable word. */
function named(value: unknown, max: number): string | undefined {
  if (isObject(value)) return text(value.category, max) ?? text(value.name, max);
  return text(value, max);
}
