import type { Knex } from 'knex';
import { createHash } from 'node:crypto';
import type { ActorBehavior } from '../../runtime/machine.js';
import { incidentMessageSchema } from '../../../schemas/governance/incident.js';
import { appendAudit } from '../../../storage/audit-log.js';
import { writeIncident } from '../../../storage/governance/incidents.js';
import { incidentMachine, initialIncidentState, type IncidentEffect, type IncidentMsg, type IncidentReply, type IncidentState } from './machine.js';

/** Projects the incident row and its audit entry in the snapshot transaction: both commit with the state. */
export const INCIDENT_KIND = 'incident';
export const incidentAddress = (incidentId: string): string => `${INCIDENT_KIND}/${incidentId}`;

/** A stable UUID-shaped id for (org, source, provider id), so the same incident always reaches the same actor. */
export function incidentIdFor(orgId: string, source: string, externalId: string): string {
  const h = createHash('sha256').update(JSON.stringify([orgId, source, externalId])).digest('hex');
  // Version nibble 5 and variant bits 10xx, as a name-based UUID would carry, so uuid columns and formats accept it.
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export function createIncidentBehavior(): ActorBehavior<IncidentState, IncidentMsg, IncidentReply, IncidentEffect> {
  return {
    kind: INCIDENT_KIND,
    initial: initialIncidentState,
    machine: incidentMachine,
    messages: incidentMessageSchema,
    async project(trx: Knex.Transaction, _id: string, _next: IncidentState, _previous: IncidentState, effects: readonly IncidentEffect[]) {
      for (const { incident, change, created } of effects) {
        await writeIncident(trx, incident);
        await appendAudit(trx, {
          orgId: incident.orgId,
          type: created ? 'incident.created' : change === 'resolved' ? 'incident.resolved' : 'incident.updated',
          actor: `webhook:${incident.source}`,
          subject: incident.id,
          payload: { externalId: incident.externalId.slice(0, 200), status: incident.status.slice(0, 200), severity: incident.severity?.slice(0, 200) ?? null },
          at: new Date(incident.updatedAt),
        });
      }
    },
  };
}
