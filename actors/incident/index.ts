export { createIncidentBehavior, INCIDENT_KIND, incidentAddress, incidentIdFor } from './actor.js';
export {
  decideIncident, initialIncidentState, transitions, incidentLifecycle, lifecycleOf, isClosedStatus,
  type IncidentState, type IncidentMsg, type IncidentReply, type IncidentEffect, type IncidentRecord, type IncidentFields,
} from './machine.js';
